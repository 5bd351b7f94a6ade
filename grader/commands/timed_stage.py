"""A worker's students' timed parts, run by a thread of the worker's own while
the worker grades its next student.

Sharing a GPU, a student's timed tests wait until the gate gives them the GPU
alone (gate.py). Waiting in the worker's thread, that worker stopped too: with
16 workers on an H200, their timed parts waited up to 118 s, and up to ten
workers at once graded nobody meanwhile (tests/gpu_runs/h200/
throughput-a4ea9ab-j16-x4-cut.log). Here one student at a time waits; the next
one's timed parts wait for it (the worker then stops: no backlog grows).

The next student's build writes the runner programs again, so each part runs a
copy of its runner kept beside it (same folder: same libraries found), removed
after. The checker is built from the harness alone and is never rebuilt by a
student's build. A sandboxed batch keeps its timed parts in the worker's thread:
they run in the student's cell, which ends with the student."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import threading
from collections.abc import Callable

from ..engine.lab_grading import TimedPart

_copies = itertools.count()


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
    """At most one student's timed parts in flight, in a thread named after
    the worker's (its trace lines say whose)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._thread: threading.Thread | None = None

    def submit(self, finish: Callable[[], None]) -> None:
        """Runs finish() in the stage's thread, once the one before has ended."""
        self.wait()
        self._thread = threading.Thread(target=finish, name=f"{self.name}-timed")
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
