"""The one process runner: what a timed-out or over-chatty program leaves
behind. Everything here runs on the CPU."""

from __future__ import annotations

import time
from pathlib import Path

from grader.infra import proc


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rfind(")") + 2 :].startswith("Z")


def test_a_timeout_kills_children_that_left_the_process_group(tmp_path):
    """A child in a session of its own (as a sandbox's runner is, and as a
    hostile submission may make itself) is outside the group that killpg
    reaches: it must be gone all the same when run() returns."""
    pid_file = tmp_path / "pid"
    script = f"setsid sleep 300 & echo $! > {pid_file}; sleep 300"
    started = time.monotonic()
    done = proc.run(["bash", "-c", script], timeout=1)
    assert done.timed_out and time.monotonic() - started < 30
    escaped = int(pid_file.read_text())
    assert not _running(escaped), f"pid {escaped} outlived its timed-out parent"


def test_a_clean_exit_kills_what_stayed_in_the_group(tmp_path):
    pid_file = tmp_path / "pid"
    done = proc.run(["bash", "-c", f"sleep 300 & echo $! > {pid_file}"], timeout=60)
    assert done.ok
    straggler = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _running(straggler) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(straggler)


def test_output_past_the_cap_stops_the_program():
    done = proc.run(
        ["bash", "-c", "yes"], timeout=60, options=proc.RunOptions(output_limit=1 << 20)
    )
    assert done.over_limit and not done.ok
    assert "stopped" in done.describe()
