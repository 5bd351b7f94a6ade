"""A batch's workers share one build of the harness (seed_build.seed_build):
a new tree takes the first tree's outputs, and ninja then compiles only what
is made from lab files there, never the lab code the first tree was built with."""

import shutil
import subprocess
from pathlib import Path

import pytest

from grader import labmeta
from grader.batch import config as batch_config, worker as batch_worker
from grader.engine import lab_grading

needs_meson = pytest.mark.skipif(
    shutil.which("ninja") is None or shutil.which("nvcc") is None,
    reason="needs meson, ninja and the CUDA toolkit (the harness's configure)",
)


def _dry_run(build: Path, targets: list[str]) -> list[str]:
    """What ninja would run for `targets`: one line per edge."""
    out = subprocess.run(
        ["ninja", "-C", str(build), "-n", "-d", "explain", *(f"tests/{t}" for t in targets)],
        capture_output=True,
        text=True,
        check=True,
    )
    # With -d explain, ninja says on stderr why each edge would run.
    return [l for l in out.stdout.splitlines() if l.startswith("[")] + [
        l for l in out.stderr.splitlines() if l.startswith("ninja explain")
    ]


def _first_tree(tmp_path: Path):
    """Lab 01's harness built in a first worker's tree: (course, lab, config,
    the lab's targets, the worker)."""
    course = labmeta.load()
    lab01 = course.lab("01")
    cfg = batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[], arch="sm_90")
    targets = [lab_grading.checker_target(lab01), lab_grading.runner_target(lab01, "labs")]
    first = batch_worker.Worker(tmp_path / "w0", None, cfg)
    assert first.prepare(course, [lab01], lambda *_: None)
    return course, lab01, cfg, targets, first


@needs_meson
def test_a_seeded_tree_compiles_only_the_lab_files_again(tmp_path):
    course, lab01, cfg, targets, first = _first_tree(tmp_path)
    # The first tree's lab file changes after its build (as the preflight's
    # reference does): its runner object no longer matches the skeleton.
    lab_file = first.src / "labs" / lab01.id / lab01.files[0]
    lab_file.write_text(lab_file.read_text() + "\n// another student's code\n")
    assert _dry_run(first.build, targets)  # stale there

    second = batch_worker.Worker(tmp_path / "w1", None, cfg)
    assert second.prepare(course, [lab01], lambda *_: None, seed=first.build)
    left = _dry_run(second.build, targets)
    assert left == [], "\n".join(left)  # built
    log = (second.build / ".ninja_log").read_text()
    # What ran in the second tree: the lab file's objects, not the harness.
    ran_here = [l.split("\t")[3] for l in log.splitlines()[1:]]
    first_log = (first.build / ".ninja_log").read_text().splitlines()[1:]
    assert len(ran_here) > len(first_log)
    again = ran_here[len(first_log) :]
    assert again and all(lab01.id in name for name in again), again


@needs_meson
def test_a_tree_seeded_from_the_same_lab_files_compiles_nothing(tmp_path):
    """The lab files are the seed's, byte for byte: every object taken was made
    from them, so the seeded tree's build runs no compile at all."""
    course, lab01, cfg, targets, first = _first_tree(tmp_path)
    asked: list[bool] = []

    def seed():  # called once the second tree is configured
        asked.append((tmp_path / "w1" / "src" / "build" / "build.ninja").exists())
        return first.build

    second = batch_worker.Worker(tmp_path / "w1", None, cfg)
    assert second.prepare(course, [lab01], lambda *_: None, seed=seed)
    assert asked == [True]
    assert _dry_run(second.build, targets) == []
    first_log = (first.build / ".ninja_log").read_text().splitlines()[1:]
    log = (second.build / ".ninja_log").read_text().splitlines()[1:]
    assert len(log) == len(first_log), log[len(first_log) :]  # nothing compiled here
