"""Correctness tests under NVIDIA compute-sanitizer, on small sizes.

Output alone misses some bugs: a race whose stale value happens to be right
(a max tree that loses nothing this time), a read of uninitialised shared
memory, a barrier that not every thread reaches. The sanitizer's tools see
them: memcheck (out-of-bounds and misaligned accesses), racecheck (shared
memory hazards), synccheck (invalid barriers), initcheck (reads of memory
nothing wrote). Every finding is a failure, reported with the tool's message.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# Small, quick cases: the tools slow kernels down by 10-100x.
SMALL_CASES = "*EdgeSizes.MatchesReference/n1000_*:*EdgeSizes.MatchesReference/n257_*:" \
              "*EdgeSizes.MatchesReference/n4097_*"
FINDING_EXIT = 86


@dataclass
class SanitizerRun:
    tool: str
    status: str                 # clean | findings | failed | unavailable | timed_out
    findings: list[str] = field(default_factory=list)
    output_tail: str = ""


def available() -> bool:
    return shutil.which("compute-sanitizer") is not None


def run_tool(binary: Path, tool: str, gtest_filter: str = SMALL_CASES,
             timeout: float = 900.0) -> SanitizerRun:
    if not available():
        return SanitizerRun(tool, "unavailable", ["compute-sanitizer is not on PATH"])
    cmd = ["compute-sanitizer", f"--tool={tool}", f"--error-exitcode={FINDING_EXIT}",
           "--print-limit=20", str(binary), f"--gtest_filter={gtest_filter}"]
    if tool == "initcheck":
        # cudaMemset counts as initialisation; the tests poison outputs on purpose.
        cmd[2:2] = ["--track-unused-memory=no"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              timeout=timeout, env={**os.environ, "LAB_SKIP_PERF": "1"})
    except subprocess.TimeoutExpired:
        return SanitizerRun(tool, "timed_out", [f"{tool} did not finish in {timeout:.0f} s"])
    out = proc.stdout + proc.stderr
    findings = [line.removeprefix("=========").strip() for line in out.splitlines()
                if line.startswith("=========") and
                any(k in line for k in ("Error", "Invalid", "hazard", "Race", "Barrier",
                                        "Uninitialized", "misaligned"))
                and "ERROR SUMMARY: 0" not in line and "0 hazards" not in line]
    if proc.returncode == FINDING_EXIT or (findings and proc.returncode != 0):
        return SanitizerRun(tool, "findings", findings[:20] or ["see output"], out[-3000:])
    if proc.returncode == 77:
        return SanitizerRun(tool, "unavailable", ["the binary skipped: no GPU"], out[-1000:])
    if proc.returncode != 0:
        return SanitizerRun(tool, "failed", [f"exit code {proc.returncode}"], out[-3000:])
    return SanitizerRun(tool, "clean", [], out[-1000:])


def run_all(binary: Path, tools: tuple[str, ...] = TOOLS) -> list[SanitizerRun]:
    return [run_tool(binary, t) for t in tools]
