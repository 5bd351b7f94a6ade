"""Is the machine busy before a batch starts? A timed run gets the CPU before
the batch's own work (proc.BACKGROUND_NICE), never before another user's, and
that work then starves the batch's untimed tests too, which run below it: a
correct call starved past its limit reads as a hang. So the batch looks, once,
before its first worker, and says so."""

from __future__ import annotations

import os
import time

# Busier than this before the batch has started anything: another user's work.
# An idle machine reads 0-5% (the sampling grader itself included).
BUSY_FRACTION = 0.25


def stat(cpus: set[int] | None = None, path: str = "/proc/stat") -> list[int]:
    """/proc/stat's time fields (user nice system idle iowait irq softirq
    steal ...) summed over `cpus`, or the whole machine's "cpu" line; [] where
    /proc/stat cannot tell (or holds none of `cpus`). `path`: another file of
    its form (a test's)."""
    summed: list[int] = []
    try:
        with open(path) as f:
            for line in f:
                name, *fields = line.split()
                if not name.startswith("cpu"):
                    break  # the cpu lines come first
                if (name == "cpu") != (cpus is None) or (cpus and int(name[3:]) not in cpus):
                    continue
                values = [int(v) for v in fields]
                summed = [a + b for a, b in zip(summed, values)] if summed else values
    except (OSError, ValueError):
        return []
    return summed


def share(before: list[int], after: list[int]) -> float | None:
    """The share of CPU time between two stat() samples that was neither idle
    nor waiting for I/O (fields 4 and 5)."""
    if len(before) < 5 or len(after) != len(before):
        return None
    delta = [a - b for a, b in zip(after, before)]
    total = sum(delta)
    return round(1 - (delta[3] + delta[4]) / total, 3) if total > 0 else None


def busy_fraction(seconds: float = 0.5, cpus: set[int] | None = None) -> float | None:
    """How busy the cores this process may use (or `cpus`) were over `seconds`."""
    cpus = cpus if cpus is not None else set(os.sched_getaffinity(0))
    before = stat(cpus)
    time.sleep(seconds)
    return share(before, stat(cpus))


def busy_note(seconds: float = 0.5) -> str | None:
    """A warning for the instructor when the machine is busy before the batch."""
    busy = busy_fraction(seconds)
    if busy is None or busy < BUSY_FRACTION:
        return None
    return (
        f"the machine's cores were {busy:.0%} busy before the batch started anything: "
        "another user's work slows the timed runs (which come first only before the "
        "batch's own work) and starves the untimed tests, where a correct call held past "
        "its limit reads as a hang; grade on a machine of its own"
    )
