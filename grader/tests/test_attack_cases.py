"""The attack cases themselves, for every lab (the GPU ones included, which
only a GPU machine grades): each is well formed, is written where it says, and
reaches the grader as the code it means to be."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "attacks"))
import judge  # noqa: E402
import make_attacks  # noqa: E402

from grader.engine.policy import fences  # noqa: E402

ATTACKS = make_attacks.load()
CHECKS = {
    "files_untouched",
    "ceiling_unmoved",
    "nothing_left",
    "note",
    "no_performance",
    "unreached",
    "faults_bounded",
}


def test_names_are_unique():
    names = [a["name"] for a in ATTACKS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a["name"])
def test_case_is_well_formed(attack):
    assert attack["expect"] in ("zero", "correct", "any")
    assert attack["policy"] in ("yes", "no", "if_builds")
    assert set(attack.get("check", [])) <= CHECKS
    assert ("note" in attack) == ("note" in attack.get("check", []))
    assert "kind" in attack or "fence" in attack or "prepend" in attack
    assert ("fence" in attack) == ("body" in attack)


@pytest.mark.parametrize("attack", [a for a in ATTACKS if "kind" not in a], ids=lambda a: a["name"])
def test_case_reaches_the_grader_as_written(attack, tmp_path):
    root = make_attacks.write_attack(
        attack, tmp_path / attack["name"], {"OUT": "/tmp/out", "PORT": "9"}
    )
    name = make_attacks.lab_file(attack["lab"])
    written = (root / "labs" / attack["lab"] / name).read_text()
    solution = (REPO / "solutions" / attack["lab"] / name).read_text()
    for fence, lines in attack.get("prepend", {}).items():
        # The solution's own code stays after the prepended lines.
        mine = next(f.body for f in fences.extract(written) if f.name == fence)
        theirs = next(f.body for f in fences.extract(solution) if f.name == fence)
        assert mine.strip().startswith(lines.strip().splitlines()[0].strip())
        assert mine.rstrip().endswith(theirs.strip())
    _, notes = fences.transplant_checked(written, solution)
    if attack.get("note") == "fence":
        assert notes, "the fence check should have refused this attack"
    else:
        # Graded as the code it is: no fence falls back to the skeleton's.
        assert not notes, notes


def test_no_performance_check_reads_the_lab(tmp_path):
    class Lab:
        lab, status, points, points_correctness, max_correctness = "09_x", "graded", 6, 6, 6
        points_performance, fraction, notes, reason, first_failure = 1.5, 0.4, [], "", None

    class Result:
        labs, notes = [Lab()], []

    attack = {"name": "slow", "expect": "correct", "policy": "no", "check": ["no_performance"]}
    assert judge.judge(attack, Result(), tmp_path, policy=False)
    Lab.points_performance = 0
    assert not judge.judge(attack, Result(), tmp_path, policy=False)


def test_a_result_without_a_lab_is_a_problem_not_a_crash(tmp_path):
    # A batch that could not grade (bwrap gone mid-run, on a GPU machine)
    # writes an error and no lab: the run must report it and go on.
    class Result:
        labs, notes, error = [], [], "not graded: SandboxError: bubblewrap is no longer installed"

    attack = {"name": "honest", "expect": "correct", "policy": "no"}
    problems = judge.judge(attack, Result(), tmp_path, policy=False)
    assert problems == [f"honest: not graded: {Result.error}"]


def test_faults_bounded_check_reads_the_hints(tmp_path):
    class Lab:
        lab, status, points, points_correctness, max_correctness = "07_x", "graded", 0, 0, 6
        points_performance, fraction, notes, reason, first_failure = 0, None, [], "", None
        hints = ["a CUDA error: a bad launch configuration or an illegal memory access"]

    class Result:
        labs, notes = [Lab()], []

    attack = {"name": "fault", "expect": "zero", "policy": "no", "check": ["faults_bounded"]}
    assert judge.judge(attack, Result(), tmp_path, policy=False)
    Lab.hints = [*Lab.hints, "64 test(s) did not run: the lab's code hung, crashed or ..."]
    assert not judge.judge(attack, Result(), tmp_path, policy=False)


def test_ceiling_check_takes_any_gpu_of_the_batch(tmp_path):
    """A two-GPU batch measures a ceiling per GPU, and a lab may be graded on
    either, and the two differ (docs/decisions.md, "The attack judge takes a
    ceiling from any GPU of the batch"); a figure neither GPU measured is a
    moved yardstick."""
    import json

    class Lab:
        lab, status, points, points_correctness, max_correctness = "07_x", "graded", 10, 6, 6
        points_performance, fraction, notes, reason, first_failure = 4, 0.93, [], "", None
        ceiling_gbps = 3003.0

    class Result:
        labs, notes, gpu = [Lab()], [], ""

    workers = [
        {"gpu": g, "ceilings": {"gpu": {"before": b}}}
        for g, b in (("GPU-0", 3007.7), ("GPU-1", 3003.0))
    ]
    (tmp_path / "batch.json").write_text(json.dumps({"workers": workers}))
    attack = {"name": "busy", "expect": "correct", "policy": "no", "check": ["ceiling_unmoved"]}
    assert not judge.judge(attack, Result(), tmp_path, policy=False)
    Result.gpu = "GPU-1"  # a result that names its GPU gets that GPU's figure only
    assert not judge.judge(attack, Result(), tmp_path, policy=False)
    Result.gpu = "GPU-0"
    assert judge.judge(attack, Result(), tmp_path, policy=False)
    Result.gpu = ""
    Lab.ceiling_gbps = 2900.0
    assert judge.judge(attack, Result(), tmp_path, policy=False)
    Lab.ceiling_gbps = None
    assert judge.judge(attack, Result(), tmp_path, policy=False)
