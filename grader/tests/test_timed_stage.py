"""A worker's students' timed parts in a stage of their own (commands/timed_stage.py):
the worker goes on to its next student while they wait for the GPU alone, each
part runs the runner its own student's build made, and at most `depth` students
wait there at once."""

import threading
import time
from pathlib import Path

from grader import labmeta
from grader.commands import batch_worker, timed_stage
from grader.engine import shared_gpu
from grader.engine.lab_grading import TimedPart
from grader.results import StudentResult

LAB = labmeta.load().lab("07")


def _part(runner: Path) -> TimedPart:
    return TimedPart(LAB, None, None, runner.parent / "checker", runner, {})  # type: ignore[arg-type]


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
        return self.name


def test_a_students_parts_start_at_once_and_are_timed_one_after_another(monkeypatch):
    from grader.infra.gate import Gate
    from tests.submissions import throughput

    lines: list[str] = []
    monkeypatch.setattr(shared_gpu, "trace", lines.append)
    log: list[str] = []
    parts = [_StartingPart(n, log) for n in ("a", "b", "c")]
    started = time.monotonic()
    got = timed_stage.run_in_turn(Gate("gpu"), parts, "w3-timed")  # type: ignore[arg-type]
    assert got == ["a", "b", "c"]  # in the parts' order
    assert time.monotonic() - started < 0.14  # three starts of 0.05 s at once
    assert [e for e in log if e.endswith("up")] == log[:3]  # all up before any is timed
    (line,) = lines
    m = throughput._HOLD.match(f"[trace +1.0 s] {line}")
    assert m and m.group(2) == "timed" and m.group(3) == " alone" and m.group(6) is not None


def test_a_part_that_cannot_start_fails_the_turn_after_the_others_ended(monkeypatch):
    from grader.infra.gate import Gate

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
