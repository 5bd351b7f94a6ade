"""grader/engine/sharing/shared_gpu.py: a run that shared the GPU and ran out of its
memory runs again alone, and only that run counts; any other failure stands."""

import re
from pathlib import Path


from grader import labmeta
from grader.engine import lab_grading, sanitize
from grader.engine.sharing import shared_gpu
from grader.engine.lab_grading import blank_result
from grader.engine.sharing.gate import Gate
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

    def __call__(self, alone: bool, admit=None) -> BinaryRun:
        assert alone == self.gate._exclusive
        assert (admit is None) == alone  # a shared run takes its slot itself; one alone has none
        self.alone.append(self.gate._exclusive)
        if admit is None:
            return self.runs.pop(0)
        with admit():
            return self.runs.pop(0)


def test_the_words_of_a_full_gpu_are_recognised():
    assert shared_gpu.short_of_memory(["", RUNNER_OOM])
    assert "other processes hold" in shared_gpu.short_of_memory([CHECKER_FULL])
    assert shared_gpu.short_of_memory(["CUDA_ERROR_OUT_OF_MEMORY in cuMemCreate"])
    assert shared_gpu.short_of_memory(["sum: expected 10, got 9", "", None]) is None


def test_an_out_of_memory_beside_others_runs_again_alone_and_only_that_counts():
    for words in (RUNNER_OOM, CHECKER_FULL):
        gate = Gate("gpu", run_slots=2)
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
        None, lambda alone, admit: calls.append(alone) or run_with(RUNNER_OOM)
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


class FakeIso:
    """An isolation that runs the runner as it is (the checker is faked too)."""

    def runner(self, binary, prefix=(), env=None):
        return binary

    def note(self):
        return ""


def grade_07(
    monkeypatch, fake_run_checker, gate, perf=False, lab_id="07", linked_policy=False, **kw
):
    """lab_grading.grade_lab of lab 07 (or `lab_id`), built already, its
    checker runs faked, its timed parts' too (and its linked policy check not
    run, unless asked)."""
    from grader.engine import lab_grading, lab_parts

    monkeypatch.setattr(lab_grading, "run_checker", fake_run_checker)
    monkeypatch.setattr(lab_parts, "run_checker", fake_run_checker)  # TimedPart.run's
    monkeypatch.setattr(lab_grading.toolchain, "build", lambda *a, **k: Built())
    monkeypatch.setattr(lab_grading.gpus, "list_gpus", lambda: [object()])
    monkeypatch.delenv("LAB_GPU_WAIT", raising=False)
    options = lab_grading.GradeOptions(
        timeout=600,
        perf=perf,
        sanitize=False,
        isolation=FakeIso(),
        linked_policy=linked_policy,
        gate=gate,
        **kw,
    )
    return lab_grading.grade_lab(COURSE.lab(lab_id), REPO_BUILD, options=options)


def test_a_run_alone_is_bounded(monkeypatch):
    """lab_grading's closure: the second run, alone, gets ALONE_SECONDS and
    ALONE_CALL_SECONDS at most, whatever --timeout says."""
    seen = []

    def fake_run_checker(checker, lab_id, spec, **kw):
        o = kw["options"]
        seen.append((o.timeout, o.call_timeout, o.gtest_filter, o.env))
        return run_with(RUNNER_OOM) if len(seen) == 1 else run_with()

    grade_07(monkeypatch, fake_run_checker, Gate("gpu"))
    assert seen[0][:2] == (600, 60.0) and seen[1][:2] == (60.0, 15.0)
    assert seen[0][2] is None and seen[1][2] is None  # one process: every test
    # Nothing timed on a shared GPU: its processes sleep while they wait for it.
    assert seen[0][3]["LAB_GPU_WAIT"] == seen[1][3]["LAB_GPU_WAIT"] == "block"


def test_a_shared_call_limit_bounds_calls_beside_others_only(monkeypatch):
    """batch --shared-call-timeout: a call of a run that shares the GPU gets that
    long at most, and a run that hung under it says so; a GPU of one's own, and a
    run alone, keep their usual limits."""
    seen = []

    def hung_run(checker, lab_id, spec, **kw):
        seen.append(kw["options"].call_timeout)
        run = run_with()
        run.cases.append(
            CaseResult(
                "SumContract.Hang",
                CaseStatus.FAILED,
                properties={"fail_hint": "timed_out"},
                failures=["the lab's code did not finish within 10 s"],
            )
        )
        return run

    result = grade_07(monkeypatch, hung_run, Gate("gpu"), shared_call_timeout=10.0)
    assert seen == [10.0]  # hung: no run alone
    assert any("--shared-call-timeout" in n and "10 s" in n for n in result.notes)

    seen.clear()
    result = grade_07(monkeypatch, hung_run, None, shared_call_timeout=10.0)
    assert seen == [60.0]  # a GPU of its own: the usual half of --timeout, at most 60
    assert not any("--shared-call-timeout" in n for n in result.notes)

    seen.clear()

    def short_of_memory_once(checker, lab_id, spec, **kw):
        seen.append(kw["options"].call_timeout)
        return run_with(RUNNER_OOM) if len(seen) == 1 else run_with()

    grade_07(monkeypatch, short_of_memory_once, Gate("gpu"), shared_call_timeout=20.0)
    assert seen == [20.0, 15.0]  # the run alone: ALONE_CALL_SECONDS, as ever


def test_only_untimed_runs_on_a_shared_gpu_wait_asleep(monkeypatch):
    """Timed runs, and every run of a GPU of its own, keep CUDA's default wait."""
    seen = []

    def fake_run_checker(checker, lab_id, spec, **kw):
        seen.append(((kw["options"].env or {}).get("LAB_GPU_WAIT"), kw["options"].perf))
        return run_with()

    for gate, perf, want in [
        (Gate("gpu"), False, ("block", False)),  # shared, untimed
        (Gate("gpu"), True, (None, True)),  # shared, but timed here (the preflight)
        (None, False, (None, False)),  # a GPU of its own
    ]:
        seen.clear()
        grade_07(monkeypatch, fake_run_checker, gate, perf)
        assert seen == [want]


def sanitizer_result(monkeypatch, *outcomes: sanitize.SanitizerRun):
    """sanitize_lab over lab 07 with the tools' one checker (run_tools) and
    each run alone (run_tool) handing out `outcomes` in turn; `alone` says,
    for each tool run, whether it held the GPU alone."""
    lab = COURSE.lab("07")
    result = blank_result(lab, LabStatus.GRADED, "")
    result.points_correctness = lab.points_correctness
    gate = Gate("gpu")
    queue, alone = list(outcomes), []

    def run_tool(checker, lab_id, runner, iso, tool, **kw):
        alone.append(gate._exclusive)
        r = queue.pop(0)
        return sanitize.SanitizerRun(tool, r.status, r.findings, r.output_tail)

    def run_tools(checker, lab_id, runner, iso, tools, **kw):
        assert kw["admit"] is not None  # the gate's shared side, a slot for each pass
        return [run_tool(checker, lab_id, runner, iso, t, **kw) for t in tools]

    monkeypatch.setattr(sanitize, "available", lambda: True)
    monkeypatch.setattr(sanitize, "run_tool", run_tool)
    monkeypatch.setattr(sanitize, "run_tools", run_tools)
    setting = shared_gpu.ToolsSetting(gate, {}, 1)
    shared_gpu.sanitize_lab(lab, "checker", "runner", object(), result, setting)
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
    assert alone == [False] * len(tools) + [True]  # the tools' checker, then memcheck alone
    assert set(result.sanitizer.values()) == {SanitizerStatus.CLEAN}
    assert result.points_correctness == COURSE.lab("07").points_correctness
    assert any(f"compute-sanitizer {tools[0]} ran again" in n for n in result.notes)


def test_a_sanitizer_hazard_still_costs_every_point(monkeypatch):
    race = sanitize.SanitizerRun("", SanitizerStatus.FINDINGS, ["Race reported between Write"])
    result, alone = sanitizer_result(monkeypatch, race, clean(), clean())
    assert alone == [False, False, False]
    assert result.points_correctness == 0
    assert result.hints[0].startswith("compute-sanitizer")


def test_shared_tests_hold_the_gate_and_take_a_run_slot_once_their_processes_are_up(
    monkeypatch, capsys
):
    monkeypatch.setenv("GRADER_TRACE", "1")
    gate = Gate("gpu", run_slots=1)
    calls = []

    def run_once(alone, admit):
        # While its processes start: the gate's shared side (a timed run waits
        # for it), no slot yet.
        starting = (bool(gate._started), gate._slots._value == 0)
        with admit():
            calls.append((starting, gate._slots._value == 0, alone))
        return run_with()

    run, note = shared_gpu.checker_sharing(gate, run_once)
    assert calls == [((True, False), True, False)]
    assert run.status == RunStatus.COMPLETED and note is None
    assert gate._slots._value == 1 and not gate._started  # given back
    # The wait, the run and the start, for a slow batch's post-mortem.
    assert re.search(
        r"tests: waited [0-9.]+ s, ran [0-9.]+ s, started [0-9.]+ s", capsys.readouterr().out
    )
    # Alone on its GPU (no gate): the same one run, no slot to take, no trace line.
    seen = []
    shared_gpu.checker_sharing(None, lambda alone, admit: seen.append((alone, admit)) or run_with())
    assert seen == [(False, None)]
    assert "waited" not in capsys.readouterr().out


def test_after_a_sanitizer_run_alone_hung_no_other_tool_goes_alone(monkeypatch):
    # Faking a full GPU and then hanging alone would otherwise stop every
    # worker for ALONE_SECONDS once per tool.
    full = sanitize.SanitizerRun("", SanitizerStatus.FAILED, ["out of memory"])
    hang = sanitize.SanitizerRun("", SanitizerStatus.TIMED_OUT, ["did not finish"])
    result, alone = sanitizer_result(monkeypatch, full, full, full, hang)
    assert alone == [False, False, False, True]
    assert result.sanitizer == {
        "memcheck": SanitizerStatus.TIMED_OUT,
        "racecheck": SanitizerStatus.FAILED,
        "synccheck": SanitizerStatus.FAILED,
    }


def test_a_run_beside_others_ends_at_its_first_hang(monkeypatch):
    """A run that shares the GPU stops after one hung call (the checker's
    --max-timeouts 1): its spinning kernel slows every other run's; a GPU of
    its own, and a run alone, keep the checker's own budget."""
    seen = []

    def fake_run_checker(checker, lab_id, spec, **kw):
        seen.append(kw["options"].max_timeouts)
        return run_with(RUNNER_OOM) if len(seen) == 1 else run_with()

    grade_07(monkeypatch, fake_run_checker, Gate("gpu", run_slots=2))
    assert seen == [lab_grading.SHARED_MAX_TIMEOUTS, None] and lab_grading.SHARED_MAX_TIMEOUTS == 1
    seen.clear()
    seen.append("first")  # no run short of memory: one call
    grade_07(monkeypatch, fake_run_checker, None)
    assert seen == ["first", None]
