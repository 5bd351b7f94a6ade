"""batch --slurm against a real Slurm (slurmctld, slurmd and munge on this
machine: .ci/slurm_localhost.sh starts them): lab 01 submissions graded by a
job array give the same gradebook as the local batch; an interrupted run is
followed and resumed; progress comes from the scheduler.

Skips with the reason where no Slurm controller answers or nvcc is missing."""
import json
import shutil
import tarfile
import time
from pathlib import Path

import pytest

from grader import batch, sandbox, slurm
from grader.tools import REPO

OK, WHY = slurm.available()
SANDBOX, _ = sandbox.available()
needs_slurm = [
    pytest.mark.skipif(not OK, reason=f"no Slurm here: {WHY} (.ci/slurm_localhost.sh starts one)"),
    pytest.mark.skipif(shutil.which("nvcc") is None,
                       reason="no nvcc: the harness cannot be built here"),
]
LAB = "01_cpu_baseline"


def make_class(root: Path) -> list[str]:
    """Five lab 01 submissions: right, untouched, wrong, not compiling, and an
    archive with a change outside the fences."""
    def student(name, base="solutions", old=None, new=None):
        shutil.copytree(REPO / base, root / name / "labs", ignore=shutil.ignore_patterns("README.md"))
        if old is not None:
            p = root / name / "labs" / LAB / "cpu_sum.cpp"
            text = p.read_text()
            assert text.count(old) == 1
            p.write_text(text.replace(old, new))
        return root / name

    alice = student("alice")
    bob = student("bob", base="labs")
    seq = "  for (std::size_t i = 0; i < n; ++i) total += in[i];\n  return total;\n"
    carl = student("carl", old=seq, new=seq.replace("return total;", "return total + (n > 1000);"))
    dina = student("dina", old=seq, new=seq.replace("return total;", "return total"))
    eve = student("eve", old="#include <vector>\n", new="#include <vector>\n#include <list>\n")
    with tarfile.open(root / "eve.tar.gz", "w:gz") as t:
        t.add(eve, arcname="eve")
    shutil.rmtree(eve)
    return [str(p) for p in (alice, bob, carl, dina, root / "eve.tar.gz")]


def config(out: Path, **kw) -> batch.BatchConfig:
    return batch.BatchConfig(out=out, lab_ids=["01"], gpus=[], perf=False, timeout=120,
                             sandbox=SANDBOX, **kw)


@needs_slurm[0]
@needs_slurm[1]
def grades(out):
    return [row.rsplit(",", 1)[0] for row in (out / "gradebook.csv").read_text().splitlines()]


def test_slurm_gradebook_equals_local_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(slurm, "POLL_SECONDS", 1.0)
    specs = make_class(tmp_path / "subs")

    local = batch.run_batch(specs, config(tmp_path / "local"), progress=lambda *_: None)
    assert {r.student: r.points for r in local} == {"alice": 6, "bob": 0, "carl": 0, "dina": 0,
                                                    "eve": 6}
    assert any("outside the fenced regions" in n for r in local if r.student == "eve"
               for n in r.notes)

    # Submit the first three and return at once (as if the instructor logged out) ...
    out = tmp_path / "slurm"
    first = []
    slurm.run_batch(specs[:3], config(out, slurm=True, slots=2, wait=False), first.append)
    state = json.loads((out / "slurm" / "state.json").read_text())
    assert any(f"submitted job {state['job']}: 3 task(s)" in m for m in first), first

    # ... then the whole class: the running job is followed, the rest submitted.
    second = []
    started = time.time()
    results = slurm.run_batch(specs, config(out, slurm=True, slots=2), second.append)
    text = "\n".join(second)
    assert f"job {state['job']} of an earlier run is still in the queue" in text, text
    assert "3 already graded, 2 to submit" in text, text
    assert "running" in text or "pending" in text, text      # counts from squeue
    assert time.time() - started < 600
    assert {r.student: r.points for r in results} == {r.student: r.points for r in local}

    # The same gradebook as the local batch, line for line (but each row's digest
    # of its result.json, which records where and when it was graded).
    assert grades(out) == grades(tmp_path / "local")
    for name in ("alice", "carl", "dina"):
        a = json.loads((out / "students" / name / "result.json").read_text())
        b = json.loads((tmp_path / "local" / "students" / name / "result.json").read_text())
        assert [(l["status"], l["points"], l["tests_failed"]) for l in a["labs"]] == \
               [(l["status"], l["points"], l["tests_failed"]) for l in b["labs"]]
    logs = sorted((out / "slurm" / "logs").glob("*.out"))
    assert len(logs) == 5 and all("[slurm-task" in p.read_text() for p in logs)

    # Everything graded: a third run submits nothing and writes the same gradebook.
    third = []
    slurm.run_batch(specs, config(out, slurm=True, slots=2), third.append)
    assert any("5 already graded, 0 to submit" in m for m in third), third
    assert not any("submitted job" in m for m in third)
    assert grades(out) == grades(tmp_path / "local")


def test_batch_slurm_without_a_controller_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(slurm, "available", lambda: (False, "no Slurm controller answers"))
    with pytest.raises(slurm.SlurmError, match="no Slurm controller"):
        slurm.run_batch(["x"], batch.BatchConfig(out=Path("/nonexistent"), slurm=True))
