"""How many compute-sanitizer runs may go at once on the machine: its
places. A run takes one before either side of a GPU's gate (gate.py's order).
"""

from __future__ import annotations

import os
import threading

# compute-sanitizer talks to its target through a socket named after the
# target's PID (isolation.py), and runners in PID namespaces of their own have
# the same PIDs: two runs at once in one network namespace take each other's
# socket, and one hangs until its limit or spins a core with the GPU idle. So
# runs that share the machine's network namespace take turns; a runner in a
# network namespace of its own (isolation.Contained.private_network, every
# sandbox Cell) takes one of SANITIZER_SLOTS places. A run gains from a few
# others beside it and no more: a quarter of the cores, at least one (see
# docs/decisions.md, "Sanitizer places"). The untimed tests and the tools share
# a checker, so a place is held from the tests' end to the tools' end.
# batch --sanitizer-places sets another count, to be measured against this one.
SANITIZER_SLOTS = max(1, len(os.sched_getaffinity(0)) // 4)  # the cores this process may use
_SANITIZER_ALONE = threading.Lock()
_SANITIZER_SHARED = threading.BoundedSemaphore(SANITIZER_SLOTS)


def set_places(places: int) -> None:
    """How many compute-sanitizer runs in network namespaces of their own may
    go at once (batch --sanitizer-places); before any run takes one."""
    global SANITIZER_SLOTS, _SANITIZER_SHARED
    SANITIZER_SLOTS = max(1, places)
    _SANITIZER_SHARED = threading.BoundedSemaphore(SANITIZER_SLOTS)


def place(isolation) -> threading.Lock | threading.BoundedSemaphore:
    """What a compute-sanitizer run through `isolation` must hold."""
    if getattr(isolation, "private_network", False):
        return _SANITIZER_SHARED
    return _SANITIZER_ALONE
