#!/usr/bin/env python3
"""compute-sanitizer in a batch, on a GPU: a racy lab loses its points there.

Three students, graded by `grader batch` on lab 08 with two workers on one GPU:
`racy` (the solution with the mutant missing_syncthreads of
tests/mutants/08_max_reduction.toml, whose outputs are nearly always right:
racecheck catches it), `hiding` (the same race, in a kernel that times a few
shared-memory steps first and, when they are slow, as under racecheck, skips
its tree and writes a wrong maximum: the tool then sees no race) and `clean`
(the solution). In a batch the tools run in the tests' checker
(grader/engine/sharing/shared_gpu.py's tests_then_tools), a path `grade` does not
take. Expected: racy 0 points with racecheck's findings (or, should the race
show in an output this time, a failed test: said, still 0); hiding 0 points
(its wrong outputs under a tool count where the reference runs clean under it:
grader/engine/sharing/reference_tools.py; the report says which way it lost them);
clean every point, every tool clean.

usage: racy_batch.py OUT [--arch ARCH]     writes OUT/racy-batch.json; exit 0 when as expected"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))
import mutate  # noqa: E402

LAB = "08_max_reduction"
MUTANTS = REPO / "tests" / "mutants" / f"{LAB}.toml"
STUDENTS = ("racy", "hiding", "clean")

# Thread 0 times 256 read-modify-writes of shared memory: about 15,000 cycles
# as a kernel runs (two dependent accesses of some 30 cycles each), and some
# 20 times that under racecheck, which checks every shared access. The block
# then agrees (a flag behind a barrier: no hazard) and, watched, skips the racy
# tree. The threshold sits between the two; both are guesses to be read off a
# GPU run (a time slice of another context inside the probe also trips it, and
# the student then fails a test: 0 points either way, the report says which).
PROBE = """
  __shared__ volatile int probe[32];
  __shared__ int watched;
  if (threadIdx.x == 0) {
    const long long t0 = clock64();
    for (int k = 0; k < 256; ++k) probe[k & 31] = probe[(k + 1) & 31] + 1;
    watched = clock64() - t0 > 100000;
  }
  __syncthreads();
  if (watched) {
    if (threadIdx.x == 0) block_maxes[blockIdx.x] = -INFINITY;
    return;
  }
"""


def make_students(work: Path) -> None:
    """STUDENTS' submissions in `work`, each a copy of the solutions."""
    for who in STUDENTS:
        shutil.copytree(REPO / "solutions", work / who / "labs")
    for who in ("racy", "hiding"):
        racy = work / who / "labs" / LAB / "reduce.cu"
        mutate.apply(MUTANTS, "missing_syncthreads", racy, racy, header=False)
    hiding = work / "hiding" / "labs" / LAB / "reduce.cu"
    anchor = "  __shared__ float partial[kThreads];\n"
    text = hiding.read_text()
    if anchor not in text:
        raise ValueError(f"lab 08's solution changed: move the probe ({anchor.strip()!r} is gone)")
    hiding.write_text(text.replace(anchor, PROBE.lstrip("\n") + anchor))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="auto")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="racy-batch-"))
    make_students(work)
    out = work / "out"
    cmd = [sys.executable, "-m", "grader", "batch", *(str(work / who) for who in STUDENTS)]
    cmd += ["--out", str(out), "--arch", args.arch, "--lab", LAB, "--jobs-per-gpu", "2"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=None)
    labs = {}
    for who in STUDENTS:
        path = out / "students" / who / "result.json"
        res = json.loads(path.read_text()) if path.exists() else {"labs": []}
        labs[who] = next((lab for lab in res["labs"] if lab["lab"] == LAB), None)
    problems = []
    r, c = labs["racy"], labs["clean"]
    if r is None or r["points"] != 0:
        problems.append(f"racy: {r and r['points']} points, expected 0")
    elif (r.get("sanitizer") or {}).get("racecheck") != "findings" and not r.get("first_failure"):
        problems.append(f"racy: 0 points but neither racecheck's findings nor a failed test: {r}")
    h = labs["hiding"]
    if h is None or h["points"] != 0:
        problems.append(f"hiding: {h and (h['points'], h.get('sanitizer'))} points, expected 0")
    if c is None or c["points"] != c["max_points"] or set(c["sanitizer"].values()) != {"clean"}:
        problems.append(
            f"clean: {c and (c['points'], c['sanitizer'])}, expected every point, clean"
        )
    report = {
        "batch_exit": done.returncode,
        "racy": r and {k: r.get(k) for k in ("points", "sanitizer", "first_failure", "hints")},
        # How it lost its points: a tool's unclean ending against a clean
        # reference (the hint "under compute-sanitizer ..."), racecheck's
        # findings (the probe missed the tool), or a failed test (it misfired).
        "hiding": h and {k: h.get(k) for k in ("points", "sanitizer", "first_failure", "hints")},
        "clean": c and {k: c.get(k) for k in ("points", "max_points", "sanitizer")},
        "problems": problems,
        "batch_tail": done.stdout[-3000:] + done.stderr[-2000:],
    }
    (args.out / "racy-batch.json").write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if k != "batch_tail"}, indent=2))
    print("racy batch:", "OK" if not problems else "; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
