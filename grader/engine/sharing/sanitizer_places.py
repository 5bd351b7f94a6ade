"""How many compute-sanitizer runs may go at once on the machine: its
places. A run takes one before either side of a GPU's gate (gate.py's order).
"""

from __future__ import annotations

import os
import threading

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
# of SANITIZER_SLOTS places. Measured so on an H100 with 16 cores
# (tests/gpu_runs/h100/sanitizer-study-38d1399.json): memcheck of lab 04's small
# cases 1.36 s alone, 0.67 s a run two at once, 0.52 four, 0.55 eight, all
# clean; racecheck 2.43 s alone, 1.12 a run eight at once; the old wrapping,
# two at once: one hung until its 60 s limit. A quarter of the cores, at least one.
# Eight places on that machine graded the class no faster than four (2,638
# student-labs an hour against 2,741: tests/gpu_runs/h100/throughput-03888d5-
# *-places*, through a study variable of 03888d5 since taken out).
# Since the untimed tests and the tools share a checker (e0643d9) a place is
# held from the tests' end to the tools' end. A lab's first tool waited 11.8 s
# on average for one and then the GPU (as before: the place's wait was most of
# the sanitizer phase's median 14.75 s at 967054b), and four places were held
# about 80% of the time, on an H100 (tests/gpu_runs/h100/throughput-c3ec080-*):
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
