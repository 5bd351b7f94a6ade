"""A batch's untimed run of a GPU lab: its tests, then compute-sanitizer's
tools, in one checker (grader/engine/sharing/shared_gpu.py's tests_then_tools), with
the stand-in checker of test_checker_passes.py: the tools run only after
every test passed, a sanitizer place is taken only once the tests are done
(with nothing of the gate held), and the grade reads the tools' verdicts
from that checker without running them again."""

from pathlib import Path

from grader import labmeta
from grader.engine import lab_grading, sanitize
from grader.engine.sharing import shared_gpu
from grader.engine.checker_passes import Pass
from grader.engine.checker_run import CheckerOptions
from grader.engine.sharing import sanitizer_places
from grader.engine.sharing.gate import Gate
from grader.infra.runner import RunnerSpec
from grader.results import BinaryRun, CaseResult
from grader.status import CaseStatus, LabStatus, RunStatus, SanitizerStatus
from grader.tests.test_checker_passes import fake_checker

COURSE = labmeta.load()


class Iso:
    """The runner as it is, in a network namespace of its own (a sanitizer
    place of SANITIZER_SLOTS, sanitizer_places.place)."""

    private_network = True

    def runner(self, binary, prefix=(), env=None):
        return RunnerSpec(Path(binary), ["unshare", "--", *prefix])

    def note(self):
        return ""


class Place:
    """A sanitizer place that records when it was taken and whether the run
    held anything of the gate then."""

    def __init__(self, gate: Gate) -> None:
        self.gate, self.taken, self.held = gate, [], 0

    def __enter__(self):
        self.taken.append((dict(self.gate._started), self.gate._slots._value))
        self.held += 1

    def __exit__(self, *exc):
        self.held -= 1


def untimed(tmp_path, monkeypatch, step="pass"):
    gate = Gate("gpu", run_slots=1)
    place = Place(gate)
    monkeypatch.setattr(sanitizer_places, "_SANITIZER_SHARED", place)
    iso, runner = Iso(), tmp_path / "runner"
    runner.write_text("#!/bin/sh\n")
    runner.chmod(0o755)
    options = CheckerOptions(timeout=30.0, seed=5, env={}, gpu_expected=None, impl="labs")
    tests = Pass("tests", iso.runner(runner), gtest_filter="A.one", timeout=30.0)
    alone = []

    def tests_alone(go_alone, admit):
        alone.append(go_alone)
        return BinaryRun("checker", RunStatus.COMPLETED)

    got = shared_gpu.tests_then_tools(
        gate,
        COURSE.lab("07"),
        fake_checker(tmp_path, step),
        runner,
        iso,
        tests,
        tests_alone,
        options,
    )
    assert place.held == 0 and not gate._started and gate._slots._value == 1  # all given back
    return got, place, alone


def test_the_tools_follow_the_tests_in_one_checker_with_a_place_taken_after_them(
    tmp_path, monkeypatch
):
    (run, note, tools), place, alone = untimed(tmp_path, monkeypatch)
    assert run.status == RunStatus.COMPLETED and [c.name for c in run.cases] == ["A.one"]
    assert note is None and alone == []
    assert [t.tool for t in tools] == list(sanitize.DEFAULT_TOOLS)
    assert {t.status for t in tools} == {SanitizerStatus.CLEAN}
    # Taken once, at the tests' end, with neither the gate's shared side nor a slot held.
    assert place.taken == [({}, 1)]


def test_no_tool_runs_after_a_failed_test(tmp_path, monkeypatch):
    fail = "if name == 'tests': outcome = 'failed'"
    (run, note, tools), place, alone = untimed(tmp_path, monkeypatch, fail)
    assert len(run.failed) == 1 and tools is None and place.taken == []


def test_tests_short_of_memory_run_again_alone_and_the_tools_apart(tmp_path, monkeypatch):
    oom = (
        "if name == 'tests': outcome = 'failed'; "
        "print('  | cudaErrorMemoryAllocation: out of memory', flush=True)"
    )
    monkeypatch.setattr(shared_gpu, "run_failures", lambda r: [r.output_tail])
    (run, note, tools), place, alone = untimed(tmp_path, monkeypatch, oom)
    assert alone == [True] and "ran again" in note
    assert tools is None  # sanitize_lab runs them on their own, as before


def test_the_grade_reads_the_tools_of_the_tests_checker(monkeypatch):
    """grade_lab in a batch (a gate, the timed tests held back): a hazard found
    in the tests' checker costs every point, and no tool runs again."""
    monkeypatch.setattr(sanitize, "available", lambda: True)
    monkeypatch.setattr(sanitize, "run_tools", lambda *a, **k: 1 / 0)
    monkeypatch.setattr(lab_grading.toolchain, "build", lambda *a, **k: Built())
    monkeypatch.setattr(lab_grading.gpus, "list_gpus", lambda: [object()])
    seen = []

    def run_passes(checker, lab_id, passes, **kw):
        seen.append(([p.name for p in passes], passes[0].gtest_filter, kw))
        tests = BinaryRun("checker", RunStatus.COMPLETED)
        tests.cases.append(CaseResult("SumContract.Small", CaseStatus.PASSED))
        tools = [BinaryRun("checker", RunStatus.COMPLETED) for _ in passes[1:]]
        for t, code in zip(tools, (0, sanitize.FINDING_EXIT, 0)):
            t.runner_exits = [{"how": {"code": code}}]
        return [tests, *tools]

    monkeypatch.setattr(shared_gpu, "run_passes", run_passes)
    later: list = []
    options = lab_grading.GradeOptions(
        timeout=600,
        perf=True,
        sanitize=True,
        isolation=Iso(),
        linked_policy=False,
        gate=Gate("gpu"),
        timed_later=later,
    )
    result = lab_grading.grade_lab(COURSE.lab("07"), Path("/nonexistent-build"), options=options)
    names, first_filter, kw = seen[0]
    assert names == ["tests", *sanitize.DEFAULT_TOOLS] and len(seen) == 1
    assert first_filter == lab_grading.UNTIMED_TESTS and kw["later_if_first_passed"]
    assert result.status == LabStatus.GRADED and result.points_correctness == 0
    assert result.sanitizer["racecheck"] == SanitizerStatus.FINDINGS
    assert later == []  # no timed run for a lab that lost its correctness points


def test_a_hang_under_one_tool_leaves_the_others_a_checker_of_their_own(monkeypatch):
    """memcheck's pass hung, and ended the checker before racecheck's and
    synccheck's: those two run again in a checker of their own, so a lab that
    hangs under one tool does not escape the others (racecheck finds its race)."""
    lab = COURSE.lab("07")
    result = lab_grading.blank_result(lab, LabStatus.GRADED, "")
    result.points_correctness = lab.points_correctness
    hung = sanitize.SanitizerRun("memcheck", SanitizerStatus.TIMED_OUT, ["did not finish"])
    unrun = [
        sanitize.SanitizerRun(t, SanitizerStatus.TIMED_OUT, ["not run"], started=False)
        for t in ("racecheck", "synccheck")
    ]
    asked = []

    def run_tools(checker, lab_id, runner, iso, tools, **kw):
        asked.append(tools)
        found = {"racecheck": SanitizerStatus.FINDINGS, "synccheck": SanitizerStatus.CLEAN}
        return [sanitize.SanitizerRun(t, found[t], ["Race reported"]) for t in tools]

    monkeypatch.setattr(sanitize, "available", lambda: True)
    monkeypatch.setattr(sanitize, "run_tools", run_tools)
    shared_gpu.sanitize_lab(
        lab,
        "checker",
        "runner",
        Iso(),
        result,
        shared_gpu.ToolsSetting(Gate("gpu"), {}, 1),
        ran=[hung, *unrun],
    )
    assert asked == [("racecheck", "synccheck")]
    assert result.sanitizer == {
        "memcheck": SanitizerStatus.TIMED_OUT,
        "racecheck": SanitizerStatus.FINDINGS,
        "synccheck": SanitizerStatus.CLEAN,
    }
    assert result.points_correctness == 0


class Built:
    ok, machine_fault, first_errors = True, "", ""
