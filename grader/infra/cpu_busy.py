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


def _times(cpus: set[int]) -> tuple[int, int]:
    """(busy, total) jiffies of `cpus` so far, from /proc/stat."""
    busy = total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                continue
            values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
            total += sum(values)
            busy += sum(values) - values[3] - values[4]
    return busy, total


def busy_fraction(seconds: float = 0.5, cpus: set[int] | None = None) -> float | None:
    """How busy the cores this process may use were over `seconds`; None where
    /proc/stat cannot tell."""
    cpus = cpus if cpus is not None else set(os.sched_getaffinity(0))
    try:
        busy0, total0 = _times(cpus)
        time.sleep(seconds)
        busy1, total1 = _times(cpus)
    except (OSError, ValueError, IndexError):
        return None
    return (busy1 - busy0) / (total1 - total0) if total1 > total0 else None


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
