"""grader/engine/shared_gpu.py: a run that shared the GPU and ran out of its
memory runs again alone, and only that run counts; any other failure stands."""

from pathlib import Path

import pytest

from grader import labmeta
from grader.engine import sanitize, shared_gpu
from grader.engine.lab_grading import blank_result
from grader.infra.gate import Gate
from grader.results import BinaryRun, CaseResult
from grader.status import CaseStatus, LabStatus, RunStatus, SanitizerStatus

COURSE = labmeta.load()
REPO_BUILD = Path("/nonexistent-build")


class Built:
    ok, machine_fault, first_errors = True, "", ""


# As the runner and the checker word it (runner_link.cpp, contract_check.cuh).
RUNNER_OOM = "the lab's program could not start: cudaErrorMemoryAllocation: out of memory"
CHECKER_FULL = (
    "the checker itself failed: the GPU has 3 GiB free, the case needs 17 GiB "
    "(other processes hold the rest)"
)


def run_with(*failures: str) -> BinaryRun:
    run = BinaryRun("checker-sum", RunStatus.COMPLETED)
    run.cases.append(CaseResult("SumContract.Small", CaseStatus.PASSED))
    for k, text in enumerate(failures):
        run.cases.append(CaseResult(f"SumContract.Case{k}", CaseStatus.FAILED, failures=[text]))
    return run


class Runs:
    """run_once for checker_sharing: hands out `runs` in turn and records
    whether the gate was held alone during each (and was asked to be)."""

    def __init__(self, gate: Gate, *runs: BinaryRun) -> None:
        self.gate, self.runs, self.alone = gate, list(runs), []

    def __call__(self, alone: bool) -> BinaryRun:
        assert alone == self.gate._exclusive
        self.alone.append(self.gate._exclusive)
        return self.runs.pop(0)


def test_the_words_of_a_full_gpu_are_recognised():
    assert shared_gpu.short_of_memory(["", RUNNER_OOM])
    assert "other processes hold" in shared_gpu.short_of_memory([CHECKER_FULL])
    assert shared_gpu.short_of_memory(["CUDA_ERROR_OUT_OF_MEMORY in cuMemCreate"])
    assert shared_gpu.short_of_memory(["sum: expected 10, got 9", "", None]) is None


def test_an_out_of_memory_beside_others_runs_again_alone_and_only_that_counts():
    for words in (RUNNER_OOM, CHECKER_FULL):
        gate = Gate("gpu", heavy_slots=2)
        runs = Runs(gate, run_with(words), run_with())
        run, note = shared_gpu.checker_sharing(gate, runs)
        assert runs.alone == [False, True]
        assert run.failed == []
        assert note and "ran again with the GPU to itself" in note
        assert ("out of memory" in note) or ("other processes hold" in note)


def test_an_out_of_memory_alone_stands():
    # The second run is judged as it is: nobody else was on the GPU.
    gate = Gate("gpu")
    runs = Runs(gate, run_with(RUNNER_OOM), run_with(RUNNER_OOM))
    run, note = shared_gpu.checker_sharing(gate, runs)
    assert runs.alone == [False, True]
    assert len(run.failed) == 1 and note


def test_other_failures_and_unshared_gpus_run_once():
    gate = Gate("gpu")
    runs = Runs(gate, run_with("sum: expected 10, got 9"))
    run, note = shared_gpu.checker_sharing(gate, runs)
    assert runs.alone == [False] and note is None and len(run.failed) == 1
    # No gate: the GPU is this worker's alone already.
    calls = []
    run, note = shared_gpu.checker_sharing(
        None, lambda alone: calls.append(alone) or run_with(RUNNER_OOM)
    )
    assert calls == [False] and note is None


def test_a_run_that_hung_gets_no_run_alone():
    # Asking for a run alone (the words of a full GPU) and then hanging in it
    # would stop every worker's GPU work: a run in which a case hung gets none.
    gate = Gate("gpu")
    whole = CaseResult("SumContract.Hang", CaseStatus.TIMED_OUT, failures=["hung"])
    # One call past --call-timeout: the checker fails the case with that hint.
    call = CaseResult(
        "SumContract.Hang",
        CaseStatus.FAILED,
        properties={"fail_hint": "timed_out"},
        failures=["the lab's code did not finish within 30 s"],
    )
    for hang in (whole, call):
        first = run_with(RUNNER_OOM)
        first.cases.append(hang)
        runs = Runs(gate, first)
        run, note = shared_gpu.checker_sharing(gate, runs)
        assert runs.alone == [False] and note is None and run is first


def test_a_run_alone_is_bounded(monkeypatch):
    """lab_grading's closure: the second run, alone, gets ALONE_SECONDS and
    ALONE_CALL_SECONDS at most, whatever --timeout says."""
    from grader.engine import lab_grading

    seen = []

    def fake_run_checker(checker, lab_id, spec, **kw):
        seen.append((kw["timeout"], kw["call_timeout"], kw["gtest_filter"]))
        return run_with(RUNNER_OOM) if len(seen) == 1 else run_with()

    class Iso:
        def runner(self, binary, prefix=()):
            return binary

        def note(self):
            return ""

    monkeypatch.setattr(lab_grading, "run_checker", fake_run_checker)
    monkeypatch.setattr(lab_grading.toolchain, "build", lambda *a, **k: Built())
    monkeypatch.setattr(lab_grading.gpus, "list_gpus", lambda: [object()])
    lab = COURSE.lab("07")
    lab_grading.grade_lab(
        lab,
        REPO_BUILD,
        timeout=600,
        perf=False,
        sanitize=False,
        isolation=Iso(),
        linked_policy=False,
        gate=Gate("gpu"),
    )
    assert seen[0][:2] == (600, 60.0) and seen[1][:2] == (60.0, 15.0)
    assert seen[0][2] == seen[1][2] == "-*ZHuge*"


def sanitizer_result(monkeypatch, *outcomes: sanitize.SanitizerRun):
    """sanitize_lab over lab 07 with run_tool handing out `outcomes` in turn."""
    lab = COURSE.lab("07")
    result = blank_result(lab, LabStatus.GRADED, "")
    result.points_correctness = lab.points_correctness
    gate = Gate("gpu")
    queue, alone = list(outcomes), []

    def run_tool(checker, lab_id, runner, iso, tool, **kw):
        alone.append(gate._exclusive)
        r = queue.pop(0)
        return sanitize.SanitizerRun(tool, r.status, r.findings, r.output_tail)

    monkeypatch.setattr(sanitize, "available", lambda: True)
    monkeypatch.setattr(sanitize, "run_tool", run_tool)
    shared_gpu.sanitize_lab(lab, "checker", "runner", object(), result, gate=gate, env={}, seed=1)
    return result, alone


def clean() -> sanitize.SanitizerRun:
    return sanitize.SanitizerRun("", SanitizerStatus.CLEAN)


def test_a_sanitizer_tool_that_ran_out_of_memory_runs_again_alone(monkeypatch):
    full = sanitize.SanitizerRun(
        "",
        SanitizerStatus.FINDINGS,
        ['Program hit cudaErrorMemoryAllocation (error 2) due to "out of memory" on CUDA API call'],
    )
    result, alone = sanitizer_result(monkeypatch, full, clean(), clean(), clean())
    tools = sanitize.DEFAULT_TOOLS
    assert alone == [False, True] + [False] * (len(tools) - 1)
    assert set(result.sanitizer.values()) == {SanitizerStatus.CLEAN}
    assert result.points_correctness == COURSE.lab("07").points_correctness
    assert any(f"compute-sanitizer {tools[0]} ran again" in n for n in result.notes)


def test_a_sanitizer_hazard_still_costs_every_point(monkeypatch):
    race = sanitize.SanitizerRun("", SanitizerStatus.FINDINGS, ["Race reported between Write"])
    result, alone = sanitizer_result(monkeypatch, race, clean(), clean())
    assert alone == [False, False, False]
    assert result.points_correctness == 0
    assert result.hints[0].startswith("compute-sanitizer")


def test_the_huge_case_is_split_from_the_rest_of_a_filter():
    assert shared_gpu.split_filters(None) == ("-*ZHuge*", "*ZHuge*")
    assert shared_gpu.split_filters("-*Bandwidth*") == (
        "-*Bandwidth*:*ZHuge*",
        "*ZHuge*-*Bandwidth*",
    )
    with pytest.raises(ValueError):
        shared_gpu.split_filters("*Small*")


class FilteredRuns:
    """run_filtered for tests_sharing: records each filter, and whether a
    memory slot was held then (gate with one slot)."""

    def __init__(self, gate: Gate, light: BinaryRun, huge: BinaryRun) -> None:
        self.gate, self.runs, self.calls = gate, {"light": light, "huge": huge}, []

    def __call__(self, gtest_filter, seconds, alone):
        slot_held = self.gate._heavy._value == 0
        self.calls.append((gtest_filter, slot_held))
        return self.runs["huge" if gtest_filter.startswith("*ZHuge") else "light"]


def test_sharing_only_the_huge_case_takes_a_memory_slot():
    gate = Gate("gpu", heavy_slots=1)
    huge = BinaryRun("checker-sum", RunStatus.COMPLETED)
    huge.cases.append(CaseResult("SumZHuge.Above2To32Elements", CaseStatus.PASSED))
    runs = FilteredRuns(gate, run_with(), huge)
    run, notes = shared_gpu.tests_sharing(gate, runs, "checker-sum", "-*Bandwidth*", 600)
    assert runs.calls == [("-*Bandwidth*:*ZHuge*", False), ("*ZHuge*-*Bandwidth*", True)]
    assert [c.name for c in run.cases] == ["SumContract.Small", "SumZHuge.Above2To32Elements"]
    assert run.status == RunStatus.COMPLETED and notes == []
    # Alone on its GPU (no gate): one run, as before.
    calls = []
    shared_gpu.tests_sharing(None, lambda f, s, a: calls.append(f) or run_with(), "c", None, 600)
    assert calls == [None]


def test_a_hang_before_the_huge_case_does_not_wait_twice(monkeypatch):
    gate = Gate("gpu", heavy_slots=1)
    hung = run_with()
    hung.status, hung.reason = RunStatus.TIMED_OUT, "the lab's tests did not finish in 600 s"
    runs = FilteredRuns(gate, hung, run_with())
    monkeypatch.setattr(
        shared_gpu,
        "not_run",
        lambda checker, f, why: BinaryRun(
            checker,
            RunStatus.COMPLETED,
            cases=[CaseResult("SumZHuge.Above2To32Elements", CaseStatus.NOT_RUN, failures=[why])],
        ),
    )
    run, _ = shared_gpu.tests_sharing(gate, runs, "checker-sum", None, 600)
    assert [f for f, _ in runs.calls] == ["-*ZHuge*"]
    assert run.status == RunStatus.TIMED_OUT
    assert (
        run.cases[-1].status == CaseStatus.NOT_RUN and "did not finish" in run.cases[-1].failures[0]
    )


def test_after_a_sanitizer_run_alone_hung_no_other_tool_goes_alone(monkeypatch):
    # Faking a full GPU and then hanging alone would otherwise stop every
    # worker for ALONE_SECONDS once per tool.
    full = sanitize.SanitizerRun("", SanitizerStatus.FAILED, ["out of memory"])
    hang = sanitize.SanitizerRun("", SanitizerStatus.TIMED_OUT, ["did not finish"])
    result, alone = sanitizer_result(monkeypatch, full, hang, full, full)
    assert alone == [False, True, False, False]
    assert result.sanitizer == {
        "memcheck": SanitizerStatus.TIMED_OUT,
        "racecheck": SanitizerStatus.FAILED,
        "synccheck": SanitizerStatus.FAILED,
    }
