"""The batch's look at the machine's load before it starts (infra/cpu_busy.py):
busy loops read as busy, and the warning names what they cost. Runs on the CPU."""

from __future__ import annotations

import os
import subprocess
import sys

from grader.infra import cpu_busy


def test_a_machine_with_every_core_busy_reads_busy_and_is_warned_of():
    cores = sorted(os.sched_getaffinity(0))
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in cores]
    try:
        busy = cpu_busy.busy_fraction(0.5)
        note = cpu_busy.busy_note(0.5)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    assert busy is not None and busy > 0.8
    assert note is not None and "busy before the batch" in note and "hang" in note


def test_cores_out_of_reach_do_not_count():
    """Only the cores this process may use (taskset, Slurm's cgroup) count."""
    assert cpu_busy.busy_fraction(0.05, cpus={10**6}) is None  # no such core: no figure
