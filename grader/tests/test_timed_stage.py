"""A worker's students' timed parts in a stage of their own (batch/timed_stage.py):
the worker goes on to its next student while they wait for the GPU alone, each
part runs the runner its own student's build made, and at most `depth` students
wait there at once."""

import threading
import time
from pathlib import Path

from grader import labmeta
from grader.batch import worker as batch_worker, timed_stage
from grader.engine.sharing import shared_gpu
from grader.engine.checker_run import CheckerOptions
from grader.engine.lab_grading import TimedPart
from grader.results import FailedCase, LabResult, StudentResult
from grader.status import CaseStatus, LabStatus

LAB = labmeta.load().lab("07")


def _part(runner: Path) -> TimedPart:
    return TimedPart(LAB, None, None, runner.parent / "checker", runner, CheckerOptions())  # type: ignore[arg-type]


def _runner(tmp_path: Path, text: str) -> Path:
    runner = tmp_path / "tests" / "lab07-runner"
    runner.parent.mkdir(exist_ok=True)
    runner.write_text(text)
    return runner


def test_a_kept_runner_is_the_students_own_whatever_the_next_build_writes(tmp_path):
    runner = _runner(tmp_path, "alice's build")
    (kept,) = timed_stage.keep_runners([_part(runner)])
    assert kept.runner.parent == runner.parent and kept.runner != runner  # its libraries beside it
    runner.write_text("bob's build")  # the worker's next student
    assert kept.runner.read_text() == "alice's build"
    (again,) = timed_stage.keep_runners([_part(runner)])
    assert again.runner != kept.runner  # two students' copies never share a name
    timed_stage.drop_runners([kept, again])
    assert not kept.runner.exists() and not again.runner.exists() and runner.exists()


def test_at_most_depth_students_wait_in_the_stage():
    stage = timed_stage.TimedStage("w0", depth=1)
    order: list[str] = []
    release = threading.Event()

    def first():
        release.wait(10)
        order.append("first")

    stage.submit(first)
    submitted = threading.Event()

    def submit_second():
        stage.submit(lambda: order.append("second"))
        submitted.set()

    threading.Thread(target=submit_second).start()
    time.sleep(0.05)
    assert not submitted.is_set()  # the worker waits: no backlog grows
    release.set()
    assert submitted.wait(10)
    stage.wait()
    assert order == ["first", "second"]


def _worker(tmp_path: Path, ran: list) -> batch_worker.Worker:
    worker = batch_worker.Worker.__new__(batch_worker.Worker)
    worker.root = tmp_path / "w3"

    def run_timed(parts, result, cell):
        ran.append(([p.runner.read_text() for p in parts], threading.current_thread().name))

    worker._run_timed = run_timed  # type: ignore[method-assign]
    return worker


def test_a_deferred_student_is_completed_by_the_stage_with_its_own_runner(tmp_path):
    runner = _runner(tmp_path, "alice's build")
    ran: list = []
    worker = _worker(tmp_path, ran)
    result = StudentResult("alice", "spec", "hash", "commit", "date")

    def grade(spec, student, course, labs, defer=False):
        assert defer
        return result, [_part(runner)]

    worker._grade = grade  # type: ignore[method-assign]
    stage = timed_stage.TimedStage("w3")
    delivered: list[StudentResult] = []
    got = worker.grade_or_defer(
        "spec",
        "alice",
        None,
        [],
        lambda complete: stage.submit(lambda: delivered.append(complete())),
    )
    assert got is None  # the worker may go on
    runner.write_text("bob's build")
    stage.wait()
    assert delivered == [result] and not result.error
    assert ran == [(["alice's build"], "w3-timed")]
    assert [p.name for p in runner.parent.iterdir()] == ["lab07-runner"]  # the copy is gone


def test_without_a_stage_the_worker_runs_the_timed_parts_itself(tmp_path):
    runner = _runner(tmp_path, "alice's build")
    ran: list = []
    worker = _worker(tmp_path, ran)
    result = StudentResult("alice", "spec", "hash", "commit", "date")
    worker._grade = lambda spec, student, course, labs, defer=False: (  # type: ignore[method-assign]
        (result, [_part(runner)]) if defer else (result, [])
    )
    assert worker.grade("spec", "alice", None, []) is result  # type: ignore[arg-type]
    assert ran == []  # _grade ran them (defer False): nothing left over


def test_with_depth_two_the_worker_goes_on_past_one_waiting_student():
    stage = timed_stage.TimedStage("w0", depth=2)
    release = threading.Event()
    stage.submit(lambda: release.wait(10))
    started = time.monotonic()
    stage.submit(lambda: None)  # does not wait for the first
    assert time.monotonic() - started < 1
    release.set()
    stage.wait()


def _timed(lab: str, fraction: float | None, performance: float = 10, correct: bool = True):
    """A lab's result after a timed run: 10 correctness points (all of them,
    or none), `performance` of its 10 performance points."""
    return LabResult(
        lab,
        lab,
        LabStatus.GRADED,
        tests_passed=72 if correct else 71,
        tests_failed=0 if correct else 1,
        fraction=fraction,
        points_correctness=10 if correct else 0,
        max_correctness=10,
        points_performance=performance,
        max_performance=10,
    )


class _StartingPart:
    """A TimedPart's stand-in: run() starts (sleeps), is admitted, 'times'."""

    def __init__(self, name: str, log: list, fail: bool = False):
        self.name, self.log, self.fail = name, log, fail

    def run(self, isolation, admit):
        assert isolation is None  # each part in a Contained of its own
        time.sleep(0.05)
        self.log.append(f"{self.name} up")
        if self.fail:
            raise RuntimeError("the checker could not start")
        with admit():
            self.log.append(f"{self.name} timed")
        return _timed(self.name, 0.9)


def test_a_students_parts_start_at_once_and_are_timed_one_after_another(monkeypatch):
    from grader.engine.sharing.gate import Gate
    from tests.submissions import throughput

    lines: list[str] = []
    monkeypatch.setattr(shared_gpu, "trace", lines.append)
    log: list[str] = []
    parts = [_StartingPart(n, log) for n in ("a", "b", "c")]
    started = time.monotonic()
    got = timed_stage.run_in_turn(Gate("gpu"), parts, "w3-timed")  # type: ignore[arg-type]
    assert [r.lab for r in got] == ["a", "b", "c"]  # in the parts' order
    assert time.monotonic() - started < 0.14  # three starts of 0.05 s at once
    assert [e for e in log if e.endswith("up")] == log[:3]  # all up before any is timed
    (line,) = lines
    m = throughput._HOLD.match(f"[trace +1.0 s] {line}")
    assert m and m.group(2) == "timed" and m.group(3) == " alone" and m.group(6) is not None


def test_a_turns_parts_borrow_from_the_gpus_pool_of_timed_checkers(monkeypatch):
    from grader.engine.sharing import checker_service
    from grader.engine.sharing.gate import Gate

    monkeypatch.setattr(shared_gpu, "trace", lambda line: None)
    pool = checker_service.Pool()
    seen = []

    class Part(_StartingPart):
        def run(self, isolation, admit):
            seen.append(checker_service.borrowed_from())
            return super().run(isolation, admit)

    parts = [Part(n, []) for n in ("a", "b")]
    timed_stage.run_in_turn(Gate("gpu"), parts, "w3-timed", pool)  # type: ignore[arg-type]
    timed_stage.run_in_turn(Gate("gpu"), parts, "w3-timed")  # type: ignore[arg-type]
    assert seen == [pool, pool, None, None]
    assert checker_service.borrowed_from() is None  # nothing left on this thread


def test_a_part_that_cannot_start_fails_the_turn_after_the_others_ended(monkeypatch):
    from grader.engine.sharing.gate import Gate

    monkeypatch.setattr(shared_gpu, "trace", lambda line: None)
    log: list[str] = []
    gate = Gate("gpu")
    parts = [_StartingPart("a", log), _StartingPart("b", log, fail=True)]
    try:
        timed_stage.run_in_turn(gate, parts, "w3-timed")  # type: ignore[arg-type]
    except RuntimeError as e:
        assert "could not start" in str(e)
    else:
        raise AssertionError("the error was lost")
    assert "a timed" in log
    assert gate._turn is None and not gate._exclusive and not gate._waiting


class _SlowPart:
    """A part whose timed runs give `runs` in turn; admission only the first
    time (the turn then still holds the GPU alone)."""

    def __init__(self, name: str, runs: list[LabResult]):
        self.name, self.runs, self.admitted, self.calls = name, list(runs), 0, 0

    def run(self, isolation, admit=None):
        self.calls += 1
        if admit is not None:
            with admit():
                self.admitted += 1
        return self.runs.pop(0)


def test_a_part_short_of_its_performance_points_is_timed_again_and_the_better_counts(
    monkeypatch,
):
    """A correct lab that measured low (beside the machine's other work) gets a
    second timed run in the same turn; the better figure counts, with a note.
    One at full points is not timed again."""
    from grader.engine.sharing.gate import Gate
    from tests.submissions import throughput

    monkeypatch.setattr(shared_gpu, "trace", lambda line: None)
    lines: list[str] = []
    monkeypatch.setattr(timed_stage, "trace", lines.append)
    slow = _SlowPart(
        "08_max_reduction",
        [_timed("08_max_reduction", 0.577, 3.1), _timed("08_max_reduction", 0.90, 10)],
    )
    fine = _SlowPart("09", [_timed("09", 0.93, 10)])
    gate = Gate("gpu")
    got = timed_stage.run_in_turn(gate, [slow, fine], "w3-timed")  # type: ignore[list-item]
    assert [r.points_performance for r in got] == [10, 10]
    assert got[0].fraction == 0.90 and "timed twice: 0.577" in got[0].notes[-1]
    assert (slow.calls, slow.admitted, fine.calls) == (2, 1, 1)
    assert gate._turn is None and not gate._exclusive
    log = "".join(f"[trace +1.0 s] {line}\n" for line in lines)  # throughput.py reads it back
    assert throughput.retimed(log) == [{"lab": "08_max_reduction", "first": 0.577, "second": 0.9}]


def test_a_second_timed_run_never_lowers_a_figure_and_a_failure_in_it_counts():
    first = _timed("08", 0.60, 4.0)
    kept = timed_stage.retimed(first, lambda: _timed("08", 0.55, 2.0), "w0")
    assert kept.fraction == 0.60 and kept.points_performance == 4.0  # the better: the first
    assert "then 0.550" in kept.notes[-1]
    wrong = _timed("08", None, 0, correct=False)  # a timed call's answer was wrong this time
    assert timed_stage.retimed(_timed("08", 0.60, 4.0), lambda: wrong, "w0") is wrong
    skipped = _timed("08", None, 0)  # its bandwidth test skipped: no second figure
    again = _timed("08", 0.60, 4.0)
    assert timed_stage.retimed(again, lambda: skipped, "w0") is again
    for not_short in (_timed("08", 0.95, 10), _timed("08", None, 0)):
        assert timed_stage.retimed(not_short, lambda: 1 / 0, "w0") is not_short  # never rerun


def _wrong_when_timed(lab: str) -> LabResult:
    """A timed run that failed a test (its untimed tests had all passed)."""
    r = _timed(lab, None, 0, correct=False)
    r.first_failure = FailedCase(
        "SumBandwidth.FractionOfCopyCeiling",
        CaseStatus.FAILED,
        n="134217728",
        input="wide_shuffled, timed",
        expected="3.2e+09",
        got="-1.7e+38",
        hint="wrong_value",
    )
    return r


def test_a_timed_run_wrong_after_every_untimed_test_passed_is_run_again(monkeypatch):
    """Wrong twice: the failure counts. Wrong, then right in every call: the
    grader cannot tell the machine from a race, so the lab is an error (graded
    again by the batch's next run), never the second run's points. Either way
    the trace says so, and throughput.py reads it back."""
    from tests.submissions import throughput

    lines: list[str] = []
    monkeypatch.setattr(timed_stage, "trace", lines.append)
    first = _wrong_when_timed("11_accurate_float_sum")
    assert timed_stage.retimed(first, lambda: _wrong_when_timed("11"), "w18-timed") is first
    again = timed_stage.retimed(
        _wrong_when_timed("11_accurate_float_sum"),
        lambda: _timed("11_accurate_float_sum", 0.93, 10),
        "w18-timed",
    )
    assert again.status == LabStatus.ERROR and again.points == 0
    assert (
        "expected 3.2e+09, got -1.7e+38" in again.reason and "right in every call" in again.reason
    )
    assert again.fraction is None  # the second run's figure is not kept
    stopped = timed_stage.retimed(
        _wrong_when_timed("11"), lambda: LabResult("11", "11", LabStatus.ERROR), "w0"
    )
    assert stopped.status == LabStatus.GRADED and stopped.points == 0  # the first counts
    hung = _wrong_when_timed("11")
    assert hung.first_failure is not None
    hung.first_failure.status = CaseStatus.TIMED_OUT  # a hang: never a second one
    assert timed_stage.retimed(hung, lambda: 1 / 0, "w0") is hung
    log = "".join(f"[trace +1.0 s] {line}\n" for line in lines)
    assert [(f["lab"], f["second_right"]) for f in throughput.timed_failures(log)] == [
        ("11_accurate_float_sum", False),
        ("11_accurate_float_sum", True),
    ]
    assert "expected 3.2e+09" in throughput.timed_failures(log)[1]["failure"]
    assert throughput.retimed(log) == []  # not a retime for time


def test_a_wrong_timed_run_is_run_again_while_its_turn_holds_the_gpu(monkeypatch):
    from grader.engine.sharing.gate import Gate

    monkeypatch.setattr(shared_gpu, "trace", lambda line: None)
    monkeypatch.setattr(timed_stage, "trace", lambda line: None)
    racy = _SlowPart("11", [_wrong_when_timed("11"), _timed("11", 0.93, 10)])
    gate = Gate("gpu")
    (got,) = timed_stage.run_in_turn(gate, [racy], "w3-timed")  # type: ignore[list-item]
    assert got.status == LabStatus.ERROR and (racy.calls, racy.admitted) == (2, 1)
    assert gate._turn is None and not gate._exclusive


def test_a_sandboxed_or_cpu_part_is_timed_again_in_its_own_hold(monkeypatch):
    """run_parts' other path (a sandbox cell, or lab 01 on the machine gate)."""
    monkeypatch.setattr(shared_gpu, "trace", lambda line: None)
    lab01 = labmeta.load().lab("01")
    part = _SlowPart("01", [_timed("01", 0.40, 1.0), _timed("01", 0.71, 10)])
    part.lab = lab01  # type: ignore[attr-defined]
    ((_, full),) = timed_stage.run_parts([part], None, None, None)  # type: ignore[list-item]
    assert full.fraction == 0.71 and part.calls == 2
