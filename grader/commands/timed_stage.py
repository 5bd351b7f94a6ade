"""A worker's students' timed parts, run by a thread of the worker's own while
the worker grades its next student.

Sharing a GPU, a student's timed tests wait until the gate gives them the GPU
alone (gate.py). Waiting in the worker's thread, that worker stopped too: with
16 workers on an H200, their timed parts waited up to 118 s, and up to ten
workers at once graded nobody meanwhile (tests/gpu_runs/h200/
throughput-a4ea9ab-j16-x4-cut.log). Here up to STAGE_DEPTH students at a time wait;
the next one's timed parts wait for the first (the worker then stops: no
backlog grows).

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
