"""The host's turn on a node, across processes: whoever reads the host's memory
bandwidth (the host's copy ceiling, lab 01's tests, timed) holds it, so that
two such never run at once on one node.

A local batch orders its own workers (batch/lead_turns.py, the machine
gate). Slurm tasks are processes of their own that may share a node: without
this, one task's lab 01 timed beside another's would read less of the
memory's bandwidth than alone, and a ceiling measured beside another task's
lab 01 would make that task's lab 01 fractions too high (two leads of one
batch measuring at once on two H200s: about two thirds, lead_turns.py). A file lock (flock) in /dev/shm is the node's
own and is freed when its holder dies, however it dies. Where a job has a
/dev/shm and a /tmp of its own (a job_container plugin), the lock orders only
that job's processes: Slurm then gives the job the node's cores to itself or
not, as the cluster is set up, and no lock of ours reaches past it.

It serves as a gate's exclusive side (gate.held): the shared side holds
nothing, since only what reads the host's bandwidth waits. A wait is bounded
(WAIT_SECONDS): a lock held past it (a process that is not ours, holding the
file) must not hang the grading, which goes on without it and says so."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from pathlib import Path

from . import log

NAME = "cuda-reduction-labs-host-turn-{uid}.lock"
# Longer than any one holder keeps it: lab 01 graded (its build and tests under
# a task's --timeout, 120 s by default) or a ceiling measured (seconds).
WAIT_SECONDS = 900.0


def default_path() -> Path:
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
    return base / NAME.format(uid=os.getuid())


class NodeLock:
    """An exclusive lock of the node's (a context manager; not reentrant)."""

    def __init__(
        self, path: Path | None = None, said=log.progress, wait_seconds: float = WAIT_SECONDS
    ) -> None:
        self.path = path or default_path()
        self.said = said  # told how long a turn waited, when it waited a second or more
        self.wait_seconds = wait_seconds
        self._fd: int | None = None

    def __enter__(self) -> NodeLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        asked = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - asked > self.wait_seconds:
                    os.close(fd)
                    self.said(
                        f"[host turn] WARNING: {self.path} was held for {self.wait_seconds:.0f} s:"
                        " going on without the node's host turn (a timed lab 01 may read low)"
                    )
                    return self
                time.sleep(0.05)
        self._fd = fd
        waited = time.monotonic() - asked
        if waited >= 1.0:
            self.said(f"[host turn] waited {waited:.1f} s for the node's host turn ({self.path})")
        return self

    def __exit__(self, *exc) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # which frees the lock

    def exclusive(self) -> NodeLock:
        return self

    def shared(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()
