"""Slurm as the batch sees it: is it there, which states a job's tasks are in
(squeue, then sacct where the cluster keeps accounting), asked again with
growing pauses while the controller does not answer."""

from __future__ import annotations

import os
import re
import shutil
import time
from typing import Callable, TypeVar

from . import proc, toolchain

# How long a failing squeue/sacct is asked again before the batch gives up on
# it, and the pauses between tries (doubling from the first to the longest).
RETRY_SECONDS = float(os.environ.get("GRADER_SLURM_RETRY", "300"))
RETRY_PAUSE = 1.0
RETRY_MAX_PAUSE = 30.0
# States of a task that is still (or again) in the scheduler's hands.
ACTIVE = {
    "PENDING",
    "RUNNING",
    "CONFIGURING",
    "COMPLETING",
    "SUSPENDED",
    "REQUEUED",
    "RESIZING",
    "SIGNALING",
    "STAGE_OUT",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "REQUEUE_CRON",
    "STOPPED",
}
# States of a task that has ended (squeue lists them only when asked with -t).
TERMINAL = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
    "REVOKED",
    "SPECIAL_EXIT",
}
T = TypeVar("T")


class SlurmError(toolchain.SetupError):
    """Slurm cannot be used from here; the message says why."""


class SlurmUnreachable(SlurmError):
    """squeue (or sacct) kept failing past RETRY_SECONDS: the job's state is unknown."""


def call(cmd: list[str], timeout: float = 60) -> proc.Finished:
    """Runs one Slurm client command (stdout and stderr together, as proc.run gives them)."""
    try:
        options = proc.RunOptions(tail=64 << 20, output_limit=256 << 20)
        return proc.run(cmd, timeout=timeout, options=options)
    except FileNotFoundError:
        raise SlurmError(
            f"{cmd[0]} is not installed: batch --slurm needs the Slurm client "
            "commands (sbatch, squeue) on this machine"
        ) from None


def output_lines(output: str, prog: str) -> list[str]:
    """The lines of a command's answer, without the client's own log lines
    ("squeue: error: ...", "sbatch: warning: ..."), which come on stderr."""
    return [
        line.strip()
        for line in output.splitlines()
        if line.strip() and not line.startswith(f"{prog}: ")
    ]


def failure_text(res: proc.Finished) -> str:
    last = next((l.strip() for l in reversed(res.output.splitlines()) if l.strip()), "")
    return res.describe() + (f": {last}" if last and not res.timed_out else "")


def _query(
    cmd: list[str],
    parse: Callable[[list[str]], T],
    settled: Callable[[str], T | None] | None = None,
    progress=None,
    timeout: float = 60,
) -> T:
    """The answer of a Slurm query, asked again while Slurm does not give one.

    parse(lines) reads a successful answer (ValueError: output it cannot read);
    settled(output) turns a failure that is itself Slurm's answer (an unknown job
    id) into a value, None for any other failure. Every other outcome (a non-zero
    exit, a time-out, output that does not parse) is a hiccup: the query is
    tried again after RETRY_PAUSE, 2x, 4x ... (at most RETRY_MAX_PAUSE) seconds,
    for up to RETRY_SECONDS in all; then SlurmUnreachable."""
    started = time.monotonic()
    pause = RETRY_PAUSE
    tries = 0
    while True:
        tries += 1
        res = call(cmd, timeout)
        if res.ok:
            try:
                return parse(output_lines(res.output, cmd[0]))
            except ValueError as e:
                why = f"an answer it cannot read ({e})"
        else:
            value = settled(res.output) if settled and not res.timed_out else None
            if value is not None:
                return value
            why = failure_text(res)
        spent = time.monotonic() - started
        if spent + pause > RETRY_SECONDS:
            raise SlurmUnreachable(
                f"{cmd[0]} failed {tries} time(s) in {spent:.0f} s (last: {why})"
            )
        if progress:
            progress(f"[slurm] {cmd[0]} failed ({why}): asking again in {pause:.0f} s")
        time.sleep(pause)
        pause = min(2 * pause, RETRY_MAX_PAUSE)


def _unknown_job(output: str) -> dict | None:
    """squeue's answer for a job id the controller no longer knows (purged after
    MinJobAge): the job is over, nothing of it is queued."""
    return {} if "Invalid job id" in output else None


def available() -> tuple[bool, str]:
    """Can jobs be submitted from here? (ok, why not)"""
    for prog in ("sbatch", "squeue", "sinfo"):
        if not shutil.which(prog):
            return False, f"{prog} is not installed (Debian: apt install slurm-client)"
    try:
        res = call(["sinfo", "-h", "-o", "%t"], timeout=15)
    except SlurmError as e:
        return False, str(e)
    if not res.ok:
        return False, "no Slurm controller answers: " + failure_text(res)
    states = " ".join(output_lines(res.output, "sinfo")).split()
    if not any(s.rstrip("*~#!%$@^-").startswith(("idle", "mix", "alloc", "comp")) for s in states):
        return False, f"no Slurm node takes jobs (node states: {', '.join(states) or 'none'})"
    return True, ""


def partition_has_gpus(partition: str | None) -> bool:
    """Asked again while sinfo fails: a hiccup here must not grade GPU labs without a GPU."""
    return _query(
        ["sinfo", "-h", "-o", "%G"] + (["-p", partition] if partition else []),
        lambda lines: any("gpu" in l for l in lines),
        lambda out: False if "Invalid partition" in out else None,
    )


_SQUEUE_LINE = re.compile(r"^(\d+|N/A)\|([A-Z_]+)$")


def _parse_queue(lines: list[str]) -> dict[int, str]:
    states = {}
    for line in lines:
        m = _SQUEUE_LINE.match(line)
        if not m:
            raise ValueError(f"{line[:80]!r}")
        states[int(m[1]) if m[1].isdigit() else -1] = m[2]
    return states


def queue_states(job: str, progress=None) -> dict[int, str]:
    """Array task id -> state, for the tasks of `job` still in the queue ({}:
    squeue answered and lists none). A failing squeue is asked again (_query);
    SlurmUnreachable where it keeps failing: never {} for an error."""
    return _query(
        ["squeue", "-h", "-r", "-j", job, "-o", "%K|%T"], _parse_queue, _unknown_job, progress
    )


def in_queue(states: dict[int, str]) -> bool:
    return any(st not in TERMINAL for st in states.values())


def _parse_sacct(lines: list[str]) -> dict[int, str]:
    states = {}
    for line in lines:
        jid, sep, state = line.partition("|")
        if not sep:
            raise ValueError(f"{line[:80]!r}")
        if "_" in jid and jid.rsplit("_", 1)[1].isdigit():
            states[int(jid.rsplit("_", 1)[1])] = state.split()[0] if state else "?"
    return states


def _no_accounting(output: str) -> dict | None:
    """sacct's answer where the cluster keeps no accounting: nothing to ask."""
    return {} if "accounting storage is disabled" in output.lower() else None


def finished_states(job: str, progress=None) -> dict[int, str]:
    """Array task id -> final state from sacct, or {} where there is no accounting
    (or sacct kept failing: the states only explain results that are missing)."""
    if not shutil.which("sacct"):
        return {}
    try:
        return _query(
            ["sacct", "-n", "-X", "-P", "-j", job, "-o", "JobID,State"],
            _parse_sacct,
            _no_accounting,
            progress,
        )
    except SlurmUnreachable as e:
        if progress:
            progress(f"[slurm] no task states from sacct: {e}")
        return {}


def job_name(job: str, progress=None) -> str:
    """The name of a job in the queue ("" when it is not there)."""
    return _query(
        ["squeue", "-h", "-j", job, "-o", "%j"],
        lambda lines: lines[0].split()[0] if lines else "",
        lambda out: "" if "Invalid job id" in out else None,
        progress,
    )
