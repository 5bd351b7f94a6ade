"""A checker's run slot, taken only once its processes are up.

The grader hands the checker two pipes (--admission-fds=READY,GO). The checker
makes its CUDA context, starts its runner (the sandbox, the runner's context,
compute-sanitizer's hooks), writes one byte on READY and waits for one on GO
before its first test (tests/support/checker_main.cpp). Here a thread waits
for that byte, takes the slot (gate.Ticket.slot), and answers. The slot is
left when the checker has ended. The time spent waiting for the slot does not
count against the run's time limit (proc.run's `paused`).

Held to the processes' end, a slot spends some of its time outside the tests'
cases: the runner's stop (under a compute-sanitizer tool, the tool's report at
the runner's exit) and both processes' ends. Leaving the slot once the checker
says its tests have ended holds the slots less but grades a class no faster,
since the slots no longer bound the batch; so the slot is held to the end,
the simpler rule (see docs/decisions.md, "A slot is taken once a run's
processes are up, and held to their end").

A checker of several passes (checker_passes.py) says 'n' between two: its
runner has ended, and it asks to start the next. The slot is left, and the
run leaves the GPU's shared side and comes back (gate.Ticket.rejoin, where
`admit` has one): a drain for a timed run may pass there, as between two
checkers. The next pass's 'r' takes a slot again.

A checker that dies before it is ready closes READY: no slot is taken. The
runner never sees either pipe: it is started with every other descriptor
closed (runner_link.cpp), and the checker marks both close-on-exec.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager


# What a run must hold from when its checker is up: a GPU's run slot (a
# gate.Ticket, whose rejoin() serves a checker's passes, or Ticket.slot).
Admit = Callable[[], AbstractContextManager[object]]


class Admission:
    """`pass_seconds`: for a checker of several passes, each pass's time limit,
    from when it is let go on ('n'; the first's from the start): proc.run's
    deadline moves with paused() (launch gives it the first pass's)."""

    def __init__(self, slot: Admit, pass_seconds: tuple[float, ...] = ()) -> None:
        self._slot = slot
        self._pass_seconds = pass_seconds
        self._passes_begun = 1
        self._started_at = 0.0
        self._credit = 0.0  # seconds the later passes' limits moved the deadline by
        self._ready_r, self._ready_w = os.pipe()
        self._go_r, self._go_w = os.pipe()
        # Closed once each: a number closed twice may by then be another thread's file.
        self._open = {self._ready_r, self._ready_w, self._go_r, self._go_w}
        self._held: AbstractContextManager[object] | None = None
        self._waiting_since: float | None = None
        self._waited = 0.0
        self._thread = threading.Thread(target=self._admit, name="admission", daemon=True)

    @property
    def child_fds(self) -> tuple[int, int]:
        """The checker's ends: READY (it writes) and GO (it reads)."""
        return self._ready_w, self._go_r

    @property
    def argument(self) -> str:
        return f"--admission-fds={self._ready_w},{self._go_r}"

    def started(self) -> None:
        """The checker exists: only it holds its ends now, so that READY reads
        as closed once it is gone."""
        self._started_at = time.monotonic()
        for fd in self.child_fds:
            self._close(fd)
        self._thread.start()

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def paused(self) -> float:
        """Seconds that do not count against the run's time limit: spent
        waiting for the slot so far, and those the later passes' limits add."""
        since = self._waiting_since
        waiting = time.monotonic() - since if since is not None else 0.0
        return self._waited + waiting + self._credit

    def _next_pass(self) -> None:
        """Pass k is let go on now: its limit runs from here (its waits for a
        slot still do not count)."""
        k = self._passes_begun
        self._passes_begun += 1
        if k < len(self._pass_seconds):
            # deadline = start + first limit + waited + credit = now + this pass's limit
            now = time.monotonic()
            first = self._pass_seconds[0]
            self._credit = now + self._pass_seconds[k] - self._started_at - first - self._waited

    def _admit(self) -> None:
        while True:
            try:
                said = os.read(self._ready_r, 1)
            except OSError:
                said = b""
            if said not in (b"r", b"n"):
                return  # it ended (before its first test, or after its last)
            self._waiting_since = time.monotonic()
            if said == b"r":
                held = self._slot()
                held.__enter__()
                self._held = held
            else:
                self._leave_slot()
                rejoin = getattr(self._slot, "rejoin", None)
                if rejoin is not None:
                    rejoin()
            self._waited += time.monotonic() - self._waiting_since
            self._waiting_since = None
            if said == b"n":
                self._next_pass()
            try:
                os.write(self._go_w, b"g")
            except OSError:
                return  # it was killed meanwhile

    def _leave_slot(self) -> None:
        if self._held is not None:
            self._held.__exit__(None, None, None)
            self._held = None

    def close(self) -> None:
        """After the checker has ended (or never started): the slot is left."""
        if self._thread.ident is not None:
            self._thread.join()
        for fd in list(self._open):
            self._close(fd)
        self._leave_slot()
