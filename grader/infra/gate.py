"""Who may use a GPU (or the whole machine) at once, inside one batch.

A batch runs several students' correctness tests side by side on one GPU
(`batch --jobs-per-gpu`): they share it, and the tests do not care. A timed
run must have the GPU to itself, so each worker's bandwidth tests wait, with
those of every other worker that asks meanwhile, until no shared run is left,
and run alone. Lab 01's timed run is on the CPU, so it takes the machine gate,
which every phase of every worker (builds included) holds shared.

A waiting timed run stops new shared runs from starting (writer preference):
otherwise a busy GPU would never fall quiet. The shared side is a whole
checker process (its runner included): a kernel the lab's code left running on
a private stream dies with that process, before a timed run may start.

Order, to rule out deadlock: the machine gate first, then a GPU's.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

# compute-sanitizer talks to its target through a socket named after the
# target's PID (isolation.py), and runners in PID namespaces of their own have
# the same PIDs: two runs at once in one network namespace take each other's
# socket. On the H200 machine three at once each spun a CPU core for 123 s with
# the GPU idle, where one alone takes about 4 s (GRADER_TRACE of the class,
# 982d29c); on two H100s, of two memcheck runs started together one ended in
# 1.1 s and the other hung until its limit, with ports of their own too
# (tests/gpu_runs/h100x2/sanitizer-study-a838259.json). So runs that share the
# machine's network namespace take turns; a runner in a network namespace of
# its own (isolation.Contained.private_network, every sandbox Cell) takes one
# of SANITIZER_SLOTS places. Each run keeps a CPU core busy: a quarter of the
# cores, at least one.
SANITIZER_SLOTS = max(1, (os.cpu_count() or 1) // 4)
_SANITIZER_ALONE = threading.Lock()
_SANITIZER_SHARED = threading.BoundedSemaphore(SANITIZER_SLOTS)


def sanitizer_slot(isolation) -> threading.Lock | threading.BoundedSemaphore:
    """What a compute-sanitizer run through `isolation` must hold."""
    if getattr(isolation, "private_network", False):
        return _SANITIZER_SHARED
    return _SANITIZER_ALONE


class Gate:
    """A readers-writer lock with writer preference, that counts how long the
    exclusive side waited (the price of sharing, in the batch's summary)."""

    def __init__(self, name: str, heavy_slots: int | None = None) -> None:
        self.name = name
        # The shared runs that need much of the GPU's memory (a lab's full tests,
        # up to gpus.HUGE_CASE_GIB each) take one of these first; the others (the
        # sanitizer's small cases) do not, so more workers than fit the memory
        # can build, check the policy and sanitize while a few run their tests.
        self._heavy = threading.BoundedSemaphore(heavy_slots) if heavy_slots else None
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0
        self.waited_seconds = 0.0

    @contextlib.contextmanager
    def shared(self, heavy: bool = False):
        if heavy and self._heavy is not None:
            with self._heavy, self.shared():
                yield
            return
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self):
        started = time.monotonic()
        with self._cond:
            self._waiting += 1
            try:
                while self._exclusive or self._shared:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._exclusive = True
            self.waited_seconds += time.monotonic() - started
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


@contextlib.contextmanager
def held(gate: Gate | None, exclusive: bool = False, heavy: bool = False):
    """`gate`'s shared (or exclusive) side, or nothing when there is no gate;
    heavy: a shared run that needs one of the gate's memory slots."""
    if gate is None:
        yield
    else:
        with gate.exclusive() if exclusive else gate.shared(heavy):
            yield
