"""The drift check of a batch's copy ceilings: measured before the first student
and after the last, a ceiling that moved by more than a quiet machine moves
between two measurements means something else used the machine meanwhile, and
the performance points of the students timed against it may be off.

It speaks only when it can matter: performance was scored, the move is beyond
the side's quiet spread, and some student's lab of that side was timed. It
names those students and the command that regrades them."""

from __future__ import annotations

import shlex
import sys

from ..labmeta import Lab
from ..results import StudentResult
from .gpu_group import Ceiling

# How far a ceiling moves between two measurements on a quiet machine: a GPU's
# device copy repeats within about 1%; the host's (a memcpy over every core)
# within about 12%, since the OS places its threads differently each time
# (docs/decisions.md). A move beyond these is another user's work.
QUIET_SPREAD = {"gpu": 0.10, "cpu": 0.25}


def moved(side: str, c: Ceiling) -> bool:
    bound = QUIET_SPREAD.get(side, QUIET_SPREAD["gpu"])
    return bool(c.before and c.after and abs(c.after - c.before) > bound * c.before)


def timed_students(
    done: list[StudentResult], side: str, gpu: str, host_labs: set[str]
) -> list[str]:
    """The students of `done` with a lab of `side` timed (a fraction measured), on
    `gpu` (a worker's gpu_uuids; empty: any, as for the host's ceiling; a result
    that names no GPU counts everywhere)."""
    on_host = side == "cpu"  # host_labs: the labs timed against the host's copy
    return sorted(
        r.student
        for r in done
        if (not gpu or not r.gpu or r.gpu == gpu)
        and any(lab.fraction is not None and (lab.lab in host_labs) == on_host for lab in r.labs)
    )


def regrade_command(out: str, students: list[str]) -> str:
    """What the instructor runs: drop their results, then the same batch again."""
    paths = " ".join(shlex.quote(f"{out}/students/{s}") for s in students)
    again = " ".join(shlex.quote(a) for a in ["python3", "-m", "grader", *sys.argv[1:]])
    return f"rm -r {paths} && {again}"


def report(
    leads, done: list[StudentResult], labs: list[Lab], out: str, perf: bool, progress
) -> list[dict]:
    """The warnings, one a ceiling (the host's is every lead's), and batch.json's
    ceiling_drift entries."""
    entries: list[dict] = []
    seen: set[int] = set()
    for w in leads if perf else []:
        for side, c in w.ceilings.items():
            if id(c) in seen or not moved(side, c):
                continue
            seen.add(id(c))
            gpu = w.gpu_uuids if side == "gpu" else ""
            host_labs = {lab.id for lab in labs if not lab.needs_gpu}
            who = timed_students(done, side, gpu, host_labs)
            entries.append(
                {"gpu": gpu, "side": side, "before": c.before, "after": c.after, "students": who}
            )
            if not who:
                continue
            of = f" of GPU {gpu}" if gpu else " of the host"
            progress(
                f"[batch] WARNING: the copy ceiling{of} moved from {c.before:.0f} to "
                f"{c.after:.0f} GB/s during the batch, more than a quiet machine moves: "
                f"something else used it. The performance points of {len(who)} student(s) "
                f"may be off: {', '.join(who[:10])}{' ...' if len(who) > 10 else ''}. "
                f"To regrade them on a quiet machine: {regrade_command(out, who)}"
            )
    return entries
