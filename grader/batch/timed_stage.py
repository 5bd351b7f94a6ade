"""A worker's students' timed parts, run by a thread of the worker's own while
the worker grades its next student.

Sharing a GPU, a student's timed tests wait until the gate gives them the GPU
alone (gate.py). Waiting in the worker's thread, that worker stops too, and
many workers at once graded nobody meanwhile (see docs/decisions.md, "A worker
grades its next student while its timed parts wait"). Here up to STAGE_DEPTH students at a time wait;
the next one's timed parts wait for the first (the worker then stops: no
backlog grows).

The next student's build writes the runner programs again, so each part runs a
copy of its runner kept beside it (same folder: same libraries found), removed
after. The checker is built from the harness alone and is never rebuilt by a
student's build. A sandboxed batch keeps its timed parts in the worker's thread:
they run in the student's cell, which ends with the student.

A student's GPU parts start at once and then take the GPU alone one after
another (run_in_turn; gate.Gate.timed_turn says why), each in a Contained of
its own; in a sandbox cell they run one after another with the GPU held.

A part that measured a figure, every correctness point earned, but fell short
of its performance points is timed once more while its turn still holds the
GPU (retimed), and the better figure counts: a timed run has the GPU alone and
the CPU first (proc.BACKGROUND_NICE), yet what else the machine does can still
slow it, and that must not cost the student (a correct lab has measured far
below the reference beside other students' builds: docs/decisions.md,
"Untimed work runs at a lower priority"). Its code cannot gain by it: each
run's every call is checked, a failure in the second run counts, and a slow
kernel is slow twice. It costs a timed run for the few correct labs that are
slow.

A part whose timed run failed a test (not by a hang), where every untimed test
and every compute-sanitizer tool had passed, is timed once more too
(inconsistent). A
second failure counts, as the first would have. A second run right in every
call leaves the grader unable to tell the machine's fault from code that is
wrong only sometimes (a race): giving the points would pass it by luck, taking
them would put a possible fault of the machine on the student. So the lab is
not graded (an error, with both runs in its reason), and the batch's next run
grades that student again (keeping this error as a note: feedback.earlier_errors).
Code that is wrong whenever it is timed is wrong twice, and a wrong first run
gains nothing: the second run's figure is the only one kept. (The one such
failure seen in a class, the reference's lab 11, was the test's tolerance, not
the machine, and a rerun with the same seed fails the same way: the tolerance
is now tests/support/contracts.cuh's same_timed, see docs/decisions.md,
"Lab 11's timed answers".)"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import shutil
import threading
import time
from collections.abc import Callable

from ..engine.sharing import checker_service
from ..engine.lab_grading import TimedPart
from ..engine.sharing.shared_gpu import timed_hold, trace_hold
from ..engine.sharing.gate import Gate, Sides, held
from ..infra.trace import trace
from ..results import LabResult
from ..status import CaseStatus, LabStatus

_copies = itertools.count()

# Students of one worker whose timed parts may wait at once: with a drain every
# DRAIN_AFTER_SECONDS (gate.py) a worker grades about one student meanwhile.
STAGE_DEPTH = 2


def keep_runners(parts: list[TimedPart]) -> list[TimedPart]:
    """Each part with a copy of its runner that no later build touches."""
    kept = []
    for part in parts:
        copy = part.runner.with_name(f"{part.runner.name}.timed-{next(_copies)}")
        shutil.copy2(part.runner, copy)
        kept.append(dataclasses.replace(part, runner=copy))
    return kept


def drop_runners(parts: list[TimedPart]) -> None:
    for part in parts:
        part.runner.unlink(missing_ok=True)


class TimedStage:
    """At most `depth` students' timed parts in flight, each in a thread named
    after the worker's (its trace lines say whose)."""

    def __init__(self, name: str, depth: int = STAGE_DEPTH) -> None:
        self.name = name
        self.depth = depth
        self._threads: list[threading.Thread] = []

    def submit(self, finish: Callable[[], None]) -> None:
        """Runs finish() in a thread of its own, once fewer than `depth` run."""
        self._threads = [t for t in self._threads if t.is_alive()]
        while len(self._threads) >= self.depth:
            self._threads.pop(0).join()
        thread = threading.Thread(target=finish, name=f"{self.name}-timed")
        thread.start()
        self._threads.append(thread)

    def wait(self) -> None:
        while self._threads:
            self._threads.pop(0).join()


def retimed(first: LabResult, again: Callable[[], LabResult], name: str) -> LabResult:
    """`first`, or, where it measured a figure with every correctness point yet
    fell short of the lab's performance points, the better of it and a second
    timed run (`again`); a second run that failed a test, or did not grade,
    counts as it is. A first run whose test gave a wrong answer goes to
    inconsistent; one that hung does not: a second hang would hold the GPU
    alone, and every worker behind it, for another call's timeout."""
    if first.status != LabStatus.GRADED:
        return first
    if first.points_correctness < first.max_correctness:
        failure = first.first_failure
        wrong = failure is not None and failure.status == CaseStatus.FAILED
        return inconsistent(first, again, name) if wrong else first
    if first.points_performance >= first.max_performance or first.fraction is None:
        return first
    second = again()
    trace(f"{name} {first.lab}: timed again, {first.fraction:.3f} then {second.fraction}")
    if second.status != LabStatus.GRADED or second.points_correctness < second.max_correctness:
        return second
    if second.fraction is None:  # its bandwidth test skipped: the first figure stands
        return first
    best = second if second.fraction > first.fraction else first
    best.notes = best.notes + [
        f"timed twice: {first.fraction:.3f} of the copy ceiling, short of the full "
        f"performance points, then {second.fraction:.3f}; the better counts (what else the "
        "machine does can slow a timed run, and that is not the lab's fault)"
    ]
    return best


def inconsistent(first: LabResult, again: Callable[[], LabResult], name: str) -> LabResult:
    """`first`, a timed run that failed a test after every untimed test passed,
    timed again (`again`): a second failure, or a second run that did not
    grade, leaves `first` to count; a second run right in every call makes
    the lab an error, not a grade (the module's docstring says why)."""
    assert first.first_failure is not None  # retimed sends only a failed case
    failed = first.first_failure.describe()
    second = again()
    right = second.correct
    trace(
        f"{name} {first.lab}: a timed test failed ({' '.join(failed.split())}); timed again: "
        + ("right in every call" if right else "failed again")
    )
    if not right:
        return first
    return dataclasses.replace(
        first,
        status=LabStatus.ERROR,
        points_correctness=0.0,
        points_performance=0.0,
        reason=(
            f"its timed run failed a test ({failed}) after every other test had passed, and "
            "a second timed run was right in every call: either the machine erred or the "
            "code is wrong only some of the time (a race); grade this student again (the "
            "batch's next run does), and read the code should it happen again"
        ),
    )


def run_in_turn(
    gate: Gate, parts: list[TimedPart], name: str, pool: checker_service.Pool | None = None
) -> list[LabResult]:
    """`parts` (one student's GPU labs, each in a Contained of its own) started
    at once, each then timed with the GPU alone, one after another
    (gate.Gate.timed_turn says why). Returns their results in order. `pool`:
    the GPU's kept timed checkers their checker runs borrow (None: their own)."""
    results: list[LabResult | None] = [None] * len(parts)
    errors: list[BaseException] = []
    with gate.timed_turn(len(parts)) as turn, checker_service.borrowing(pool):

        def run(i: int) -> None:
            try:
                with checker_service.borrowing(pool):
                    results[i] = parts[i].run(None, admit=turn.admit(i))
            except BaseException as e:  # re-raised in the worker's thread
                errors.append(e)
            finally:
                turn.settle(i)  # ended: nothing of it starts later

        threads = [
            threading.Thread(target=run, args=(i,), name=f"{name}-part{i}")
            for i in range(len(parts))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if turn.got is not None and not errors:  # the GPU is still this turn's alone
            for i, part in enumerate(parts):
                first = results[i]
                if first is not None:
                    results[i] = retimed(first, functools.partial(part.run, None), name)
        end = time.monotonic()
    up = turn.up if turn.up is not None else end
    got = turn.got if turn.got is not None else end
    trace_hold(name, "timed alone", turn.asked, turn.passed, up, got, end)
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


def run_parts(
    parts: list[TimedPart],
    cell,
    gate: Gate | None,
    machine: Sides | None,
    pool: checker_service.Pool | None = None,
) -> list[tuple[TimedPart, LabResult]]:
    """A student's held-back timed parts, each with its full result: the GPU
    labs' alone on their GPU (started at once, run_in_turn, where each has a
    Contained of its own: no sandbox cell), lab 01's alone on the machine."""
    on_gpu = [t for t in parts if t.lab.needs_gpu]
    on_cpu = [t for t in parts if not t.lab.needs_gpu]
    done: list[tuple[TimedPart, LabResult]] = []
    if on_gpu and cell is None and gate is not None:
        with held(machine):
            fulls = run_in_turn(gate, on_gpu, threading.current_thread().name, pool)
        done += zip(on_gpu, fulls)
        on_gpu = []
    for group, gates in (
        (on_gpu, lambda: (held(machine), timed_hold(gate, True, "timed"))),
        (on_cpu, lambda: (held(machine, True), held(None))),
    ):
        if not group:
            continue
        outer, inner = gates()
        with outer, inner:
            for part in group:
                first = part.run(cell)
                done.append((part, retimed(first, functools.partial(part.run, cell), part.lab.id)))
    return done
