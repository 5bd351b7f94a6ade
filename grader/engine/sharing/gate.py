"""Who may use a GPU (or the whole machine) at once, inside one batch.

A batch runs several students' correctness tests side by side on one GPU
(`batch --jobs-per-gpu`): they share it, and the tests do not care; a few at
a time, each holding one of the gate's run slots (gpus.runs_at_once says how
many and why). A timed
run must have the GPU to itself, so each worker's bandwidth tests wait, with
those of every other worker that asks meanwhile, until no shared run is left,
and run alone. Lab 01's timed run is on the CPU, so it takes the machine gate,
which every phase of every worker (builds included) holds shared.

A waiting timed run stops new shared runs from starting (writer preference):
otherwise a busy GPU would never fall quiet. Except while a shared run has
lasted longer than STALL_SECONDS, and then for STALL_SECONDS at most
(_stall_admits says why): a student's endless loop holds the GPU until its
timeout, and every other worker stopped behind the waiting timed run would
idle that long for each hung lab of the class (see docs/decisions.md, "A run
stalls after 20 s"). The others go on sharing meanwhile; once the long run
ends, new shared runs wait again and the timed run gets the GPU as soon as the
runs in flight end.

Each such drain costs every worker the longest run in flight, and one drain
per student was most of a batch's waiting. So a batch's gate drains for
`drain_at` timed runs waiting, or for one that has waited DRAIN_AFTER_SECONDS,
and then serves every timed run that waits, one after another: one drain for
several students (see docs/decisions.md, "Timed runs wait together"). Until
then a timed run takes the GPU only when it falls quiet by itself. The shared
side is a whole checker process (its runner included): a kernel the lab's code
left running on a private stream dies with that process, before a timed run
may start.

A shared run holds the gate from the start of its processes, and one of the
run slots only once they are up (shared_pass, then Ticket.slot): making CUDA
contexts, a sandbox and compute-sanitizer's hooks is a large part of a test
run and uses no slot's memory, and the slots are what a batch waits for (see
docs/decisions.md, "A slot is taken once a run's processes are up"). A run
counts as stalled once its start or its time in a slot passes STALL_SECONDS,
never for its wait for a slot: a lab whose program hangs as it starts (before
the checker's first test) holds up a drain no longer than one that hangs in a
test.

A worker's timed parts (one student's labs) start their processes before
they have the GPU alone (timed_turn, then TimedTurn.admit): the parts start at
once, while the shared runs in flight drain, and then hold the GPU alone one
after another, so the GPU's time alone is not spent making contexts (see
docs/decisions.md, "A student's timed parts start before they hold the GPU
alone"). One turn at a time, from its start to its end: a runner runs the
lab's code, which may launch kernels of its own while it waits, so no other
student's process may be up while a timed run holds the GPU. A student's own
parts may: they can only slow each other.

Order, to rule out deadlock: the machine gate first, then a GPU's; a
compute-sanitizer place (sanitizer_places.place) before either side of a GPU's gate;
on a GPU, the gate's shared side first, then a slot.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

# Far above a correct lab's full tests on a shared GPU, far below a hang's
# timeout (see docs/decisions.md, "A run stalls after 20 s").
STALL_SECONDS = 20.0

# How long a timed run may wait before the gate drains for it alone: a
# student's result waits that long at most for fewer than drain_at others.
# Shorter, drains come so often that most wait behind a hung run (see
# docs/decisions.md, "Timed runs wait together").
DRAIN_AFTER_SECONDS = 90.0

# How long a timed turn waits for its parts to be up before it takes the GPU
# alone without the late ones (Gate._upgrade): 40 times a start under load.
START_SECONDS = 20.0


class Gate:
    """A readers-writer lock with writer preference (from drain_at waiting
    timed runs or one waiting drain_after seconds; suspended while a shared run
    is stalled), that counts how long the exclusive side waited (the price
    of sharing, in the batch's summary)."""

    def __init__(
        self,
        name: str,
        run_slots: int | None = None,
        stall_seconds: float = STALL_SECONDS,
        drain_at: int = 1,
        drain_after: float = DRAIN_AFTER_SECONDS,
    ) -> None:
        self.name = name
        self.stall_seconds = stall_seconds
        self.drain_at = max(1, drain_at)
        self.drain_after = drain_after
        self._waiting_since: list[float] = []  # the waiting timed runs' arrivals
        self._draining = False  # sticks until no timed run waits
        self._drain_since = 0.0  # when the drain became due
        # Shared runs in flight: token -> when it started, or got its slot
        # (None while it waits for one: that wait is not a stall).
        self._started: dict[int, float | None] = {}
        self._tokens = 0
        # Every shared run (a checker run, a compute-sanitizer tool) takes one
        # of these first: gpus.runs_at_once says how many, and why.
        self._slots = threading.BoundedSemaphore(run_slots) if run_slots else None
        self._cond = threading.Condition()
        self._exclusive = False
        self._turn: TimedTurn | None = None  # the timed turn whose processes are up
        self.waited_seconds = 0.0

    @contextlib.contextmanager
    def shared(self):
        """The shared side and a slot at once: a run whose processes start in it."""
        with self.shared_pass() as ticket, ticket.slot():
            yield

    @contextlib.contextmanager
    def shared_pass(self):
        """The shared side without a slot yet: yields the Ticket whose slot()
        the run takes once its processes are up."""
        asked = time.monotonic()
        with self._cond:
            self._wait_to_share()
            self._tokens += 1
            token = self._tokens
            self._started[token] = time.monotonic()
        try:
            yield Ticket(self, token, asked)
        finally:
            with self._cond:
                del self._started[token]
                self._cond.notify_all()

    def _wait_to_share(self) -> None:
        """Until a shared run may start. (lock held)"""
        while self._exclusive or (self._drain_due() and not self._stall_admits()):
            # Woken by a change, or often enough to see a run in flight stall.
            self._cond.wait(timeout=min(1.0, self.stall_seconds / 4))

    def _rejoin(self, token: int, between: Callable[[], object] | None) -> None:
        """A shared run leaves, calls `between` with nothing of the gate held,
        and comes back as one that starts anew."""
        with self._cond:
            del self._started[token]
            self._cond.notify_all()
        if between is not None:
            between()
        with self._cond:
            self._wait_to_share()
            self._started[token] = time.monotonic()

    def _phase(self, token: int, since: float | None) -> None:
        with self._cond:
            self._started[token] = since

    @property
    def _waiting(self) -> int:
        """Timed runs waiting. (lock held)"""
        return len(self._waiting_since)

    def _drain_due(self) -> bool:
        """Must new shared runs wait for the timed ones? (lock held)"""
        if not self._waiting:
            self._draining = False
        elif not self._draining:
            now = time.monotonic()
            oldest = now - min(self._waiting_since)
            if self._waiting >= self.drain_at or oldest >= self.drain_after:
                self._draining, self._drain_since = True, now
        return self._draining

    def _stall_admits(self) -> bool:
        """Does a stalled run let new shared runs start during a drain? Only for
        stall_seconds from when both the drain was due and a run had stalled:
        under load every run lasts longer, so a stalled run is nearly always in
        flight, and runs started beside it would keep the GPU busy while timed
        runs wait (see docs/decisions.md, "A stalled run lets new shared runs
        start for a bounded time only"). Bounded, the drain waits at most for a
        hang's timeout. (lock held)"""
        if not self._stalled():
            return False
        stalled_since = min(t for t in self._started.values() if t is not None)
        stalled_since += self.stall_seconds
        return time.monotonic() - max(self._drain_since, stalled_since) < self.stall_seconds

    def _stalled(self) -> bool:
        """Has a shared run in flight lasted past stall_seconds? (lock held)"""
        now = time.monotonic()
        return any(t is not None and now - t > self.stall_seconds for t in self._started.values())

    @contextlib.contextmanager
    def exclusive(self):
        started = time.monotonic()
        with self._cond:
            self._waiting_since.append(started)
            self._cond.notify_all()  # shared runs waiting may now see a drain due
            try:
                while self._exclusive or self._started or self._turn is not None:
                    self._cond.wait()
            finally:
                self._waiting_since.remove(started)
            self._exclusive = True
            self.waited_seconds += time.monotonic() - started
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    @contextlib.contextmanager
    def timed_turn(self, parts: int):
        """A timed run of `parts` processes, each of which takes the GPU alone
        through the yielded TimedTurn's admit(i) once it is up. The turn comes
        when no run holds the GPU alone and no other turn is up, and either a
        drain is due (the processes start while the shared runs in flight end)
        or the GPU is quiet. It ends, and leaves the GPU, when the block does:
        after every part's processes have ended."""
        asked = time.monotonic()
        with self._cond:
            self._waiting_since.append(asked)
            self._cond.notify_all()  # shared runs waiting may now see a drain due
            try:
                while (
                    self._exclusive
                    or self._turn is not None
                    or (self._started and not self._drain_due())
                ):
                    # Woken by a change, or often enough to see drain_after pass.
                    self._cond.wait(timeout=1.0)
            except BaseException:
                self._waiting_since.remove(asked)
                raise
            turn = self._turn = TimedTurn(self, parts, asked)
        try:
            yield turn
        finally:
            with self._cond:
                self._turn = None
                if turn.got is not None:
                    self._exclusive = False
                else:
                    self._waiting_since.remove(asked)
                self._cond.notify_all()

    def _upgrade(self, turn: TimedTurn) -> None:
        """`turn` takes the GPU alone, once its parts are up (or START_SECONDS
        after its start: a part that hangs as it starts can only slow its own
        student's other parts) and no shared run is left. (lock held)"""
        deadline = turn.passed + START_SECONDS
        while len(turn.settled) < turn.parts and time.monotonic() < deadline:
            self._cond.wait(timeout=deadline - time.monotonic())
        if turn.up is None:
            turn.up = time.monotonic()
        while turn.got is None:
            if not (self._exclusive or self._started):
                self._exclusive = True
                turn.got = time.monotonic()
                self._waiting_since.remove(turn.asked)
                self.waited_seconds += turn.got - turn.asked
                self._cond.notify_all()
            else:
                self._cond.wait()


class TimedTurn:
    """One student's timed parts at a gate (Gate.timed_turn): part i's
    processes start with admit(i) as their admission (admission.py), which
    returns once the turn holds the GPU alone and no other part of it runs.
    asked, passed, up, got: when the turn was asked for, given, when its parts
    were up, and when it got the GPU alone (for the batch's trace)."""

    def __init__(self, gate: Gate, parts: int, asked: float) -> None:
        self._gate = gate
        self.parts = parts
        self.settled: set[int] = set()  # the parts that are up, or ended before
        self.asked = asked
        self.passed = time.monotonic()
        self.up: float | None = None
        self.got: float | None = None
        self._one = threading.Lock()  # one part on the GPU at a time

    def settle(self, part: int) -> None:
        """Part `part` is up, or its run ended (up or not): nothing of it starts later."""
        with self._gate._cond:
            self.settled.add(part)
            self._gate._cond.notify_all()

    def admit(self, part: int):
        """run_checker's `admit` for part `part`."""

        @contextlib.contextmanager
        def alone():
            self.settle(part)
            with self._gate._cond:
                self._gate._upgrade(self)
            with self._one:
                yield

        return alone


class Ticket:
    """A shared run's place at its gate (Gate.shared_pass), and when it asked
    for it, passed, and got and left its slot (for the batch's trace). Called,
    it is the run's slot(): what admission.py takes once the run is up."""

    def __init__(self, gate: Gate, token: int, asked: float) -> None:
        self._gate = gate
        self._token = token
        self.asked = asked
        self.passed = time.monotonic()
        self.slot_asked: float | None = None
        self.slot_got: float | None = None
        # Told of each pass that ends at a rejoin (shared_gpu.timed_hold traces it).
        self.on_pass_end: Callable[[Ticket], None] | None = None

    def __call__(self) -> contextlib.AbstractContextManager[None]:
        return self.slot()

    def rejoin(self, between: Callable[[], object] | None = None) -> None:
        """Between two passes of one checker (checker_passes.py), its runner
        ended: the run leaves the shared side, where a drain due for a timed
        run may now pass, and comes back as a run that starts anew. `between`
        is called once it has left: what the next pass must hold before the
        gate (a compute-sanitizer place, in the order at the top)."""
        if self.on_pass_end is not None:
            self.on_pass_end(self)
        self.asked = time.monotonic()
        self._gate._rejoin(self._token, between)
        self.passed = time.monotonic()
        self.slot_asked = self.slot_got = None

    @contextlib.contextmanager
    def slot(self):
        """One of the gate's run slots (none to take where it has no slots)."""
        self.slot_asked = time.monotonic()
        self._gate._phase(self._token, None)
        with self._gate._slots if self._gate._slots is not None else contextlib.nullcontext():
            self.slot_got = time.monotonic()
            self._gate._phase(self._token, self.slot_got)
            yield


class Sides(Protocol):
    """What held() holds: a Gate, or a lock of the node's (node_lock.NodeLock)."""

    def shared(self) -> contextlib.AbstractContextManager[Any]: ...

    def exclusive(self) -> contextlib.AbstractContextManager[Any]: ...


@contextlib.contextmanager
def held(gate: Sides | None, exclusive: bool = False):
    """`gate`'s shared (or exclusive) side, or nothing when there is no gate."""
    if gate is None:
        yield
    else:
        with gate.exclusive() if exclusive else gate.shared():
            yield
