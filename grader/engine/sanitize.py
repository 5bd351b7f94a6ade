"""A lab's small correctness cases with the runner under NVIDIA compute-sanitizer.

Output alone misses some bugs: a race whose stale value happens to be right
(a max tree that loses nothing this time), a barrier or warp intrinsic that
not every thread reaches or names, an access out of bounds that lands in
memory the tests do not watch. The sanitizer's tools see them: memcheck
(out-of-bounds and misaligned accesses), racecheck (shared-memory hazards),
synccheck (invalid barriers and warp synchronisation), initcheck (reads of
memory nothing wrote; on request only: the tests poison every buffer, so it
finds little here). The checker drives the same calls as in grading, on the
smallest sizes (under racecheck each case's first call only: FIRST_CALL_ONLY);
the tool wraps only the runner, and says what it found with its exit code,
which the checker records. The tools run in one checker, a pass each
(run_tools); in a batch, as passes after the lab's untimed tests in theirs
(shared_gpu.tests_then_tools).

The sanitizer runs inside the lab's own process: it finds honest mistakes,
it is not a security boundary (a submission built to hide from it can). A
tool's run whose tests failed is no clean bill (TESTS_FAILED), and in a batch
an ending that is neither a finding nor a clean bill costs the points where the
reference runs clean under the tool (reference_tools.py).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..status import CaseStatus, RunStatus, SanitizerStatus
from .sharing.admission import Admit
from ..results import BinaryRun
from .checker_passes import NOT_STARTED, Pass, run_passes
from .checker_run import CheckerOptions

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOLS = ("memcheck", "racecheck", "synccheck")
TOOL_SECONDS = 600.0  # one tool over a lab's small cases, at most
# Dynamic parallelism (lab 10): racecheck and synccheck report hazards in the
# reference solution's child launches, which their documentation does not
# support; memcheck only (see docs/decisions.md, "Lab 10 under memcheck only").
RDC_TOOLS = ("memcheck",)
# Small, quick cases: the tools slow kernels down by 10-100x.
SMALL_CASES = (
    "*EdgeSizes.MatchesReference/n1000_*:*EdgeSizes.MatchesReference/n257_*:"
    "*EdgeSizes.MatchesReference/n4097_*"
)
FINDING_EXIT = 86
TOOL_MAX_TIMEOUTS = 2  # the checker's default, as a tool's own checker had
# One call of a small case under a tool: hundreds of times what such a call
# takes under the slowest tool with other runs beside it (see
# docs/decisions.md, "One call under a compute-sanitizer tool"). A hang under a tool costs the
# points where the reference runs clean under it (reference_tools.py), so this
# is what a lab that hangs when watched costs the batch: twice it (300 s before).
TOOL_CALL_SECONDS = 60.0
# Tools under which each case makes its first call only (the checker's
# --first-call-only; tests/support/test_env.hpp says what the later calls
# check). racecheck is by far the slowest tool a call, and held the batch's
# run slots longer than any other; the first call alone halves its hold (see
# docs/decisions.md, "Under racecheck each case makes its first call only").
# Its hazards are in shared memory, which lives for one block of one launch:
# the later calls run the same kernels on the same sizes.
FIRST_CALL_ONLY = ("racecheck",)


@dataclass
class SanitizerRun:
    tool: str
    status: SanitizerStatus
    findings: list[str] = field(default_factory=list)
    output_tail: str = ""
    seconds: float = 0.0
    started: bool = True  # False: its pass never started (the one before stopped the checker)


def tools_for(lab) -> tuple[str, ...]:
    """The tools a lab's small cases run under (RDC_TOOLS says why not all)."""
    return RDC_TOOLS if lab.rdc else DEFAULT_TOOLS


def available() -> bool:
    return shutil.which("compute-sanitizer") is not None


def tool_prefix(tool: str) -> list[str]:
    prefix = [
        shutil.which("compute-sanitizer") or "compute-sanitizer",
        f"--tool={tool}",
        f"--error-exitcode={FINDING_EXIT}",
        "--print-limit=10",
    ]
    if tool == "initcheck":
        prefix.append("--track-unused-memory=no")  # poisoning by memset counts as writing
    return prefix + ["--"]


def _findings(output: str) -> list[str]:
    """The tool's report lines, as the checker echoed the runner's output ("  | ...")."""
    lines = []
    for raw in output.splitlines():
        line = raw.removeprefix("  | ").strip()
        if line.startswith("=========") and any(
            k in line
            for k in (
                "Error",
                "Invalid",
                "hazard",
                "Race",
                "Barrier",
                "Uninitialized",
                "misaligned",
            )
        ):
            if "ERROR SUMMARY: 0" in line or " 0 hazards" in line:
                continue
            lines.append(line.removeprefix("=========").strip())
    return lines


@dataclass(frozen=True)
class ToolOptions:
    """How a lab's small cases run under the tools (run_tools): one value that
    the tools' callers pass on whole rather than argument by argument."""

    gtest_filter: str = SMALL_CASES
    timeout: float = TOOL_SECONDS  # each tool's
    env: dict[str, str] | None = None
    seed: int | None = None


def run_tool(
    checker: Path,
    lab_id: str,
    runner_binary: Path,
    isolation,
    tool: str,
    options: ToolOptions = ToolOptions(),
    admit: Admit | None = None,
) -> SanitizerRun:
    """One tool over the small cases: run_tools of that tool alone."""
    return run_tools(
        checker, lab_id, runner_binary, isolation, (tool,), options=options, admit=admit
    )[0]


def run_tools(
    checker: Path,
    lab_id: str,
    runner_binary: Path,
    isolation,
    tools: tuple[str, ...],
    options: ToolOptions = ToolOptions(),
    admit: Admit | None = None,
) -> list[SanitizerRun]:
    """run_tool for each of `tools`, in one checker: a pass each
    (checker_passes.py says why). options.timeout is each tool's, as in run_tool."""
    if not available():
        return [
            SanitizerRun(t, SanitizerStatus.UNAVAILABLE, ["compute-sanitizer is not on PATH"])
            for t in tools
        ]
    o = options
    passes = tool_passes(
        runner_binary, isolation, tools, env=o.env, gtest_filter=o.gtest_filter, timeout=o.timeout
    )
    shared = CheckerOptions(timeout=o.timeout, gtest_filter=o.gtest_filter, seed=o.seed, env=o.env)
    runs = run_passes(checker, lab_id, passes, options=shared, admit=admit)
    return [verdict(t, run) for t, run in zip(tools, runs)]


def tool_passes(
    runner_binary: Path,
    isolation,
    tools: tuple[str, ...],
    *,
    env: dict[str, str] | None,
    gtest_filter: str = SMALL_CASES,
    timeout: float = TOOL_SECONDS,
) -> list[Pass]:
    """A checker pass for each tool, with run_tool's options (a pass after
    other tests: its own filter, limit, call timeout and hang budget)."""
    return [
        Pass(
            t,
            isolation.runner(runner_binary, tool_prefix(t), env=env),
            t in FIRST_CALL_ONLY,
            gtest_filter=gtest_filter,
            timeout=timeout,
            call_timeout=min(timeout, TOOL_CALL_SECONDS),
            max_timeouts=TOOL_MAX_TIMEOUTS,
        )
        for t in tools
    ]


def verdict(tool: str, run: BinaryRun) -> SanitizerRun:
    """What a checker run of the small cases under `tool` found."""
    got = _verdict(tool, run)
    got.started = NOT_STARTED not in run.properties
    return got


def _verdict(tool: str, run: BinaryRun) -> SanitizerRun:
    seconds = sum(c.time_ms for c in run.cases) / 1000.0
    if run.status == RunStatus.SKIPPED:
        return SanitizerRun(
            tool, SanitizerStatus.UNAVAILABLE, ["no GPU here"], run.output_tail[-1000:], seconds
        )
    if run.status in (RunStatus.TIMED_OUT, RunStatus.CHECKER_FAILED):
        return SanitizerRun(
            tool,
            SanitizerStatus.TIMED_OUT
            if run.status == RunStatus.TIMED_OUT
            else SanitizerStatus.FAILED,
            [run.reason],
            run.output_tail[-3000:],
            seconds,
        )
    findings = _findings(run.output_tail)
    codes = [(e.get("how") or {}).get("code") for e in run.runner_exits]
    if FINDING_EXIT in codes or findings:
        return SanitizerRun(
            tool,
            SanitizerStatus.FINDINGS,
            findings[:20] or ["see the output"],
            run.output_tail[-3000:],
            seconds,
        )
    if not run.runner_exits or codes[-1] != 0:
        # The tool did not finish cleanly: no verdict means no clean bill.
        return SanitizerRun(
            tool,
            SanitizerStatus.FAILED,
            [
                f"the runner under {tool} ended: "
                f"{run.runner_exits[-1] if run.runner_exits else 'unknown'}"
            ],
            run.output_tail[-3000:],
            seconds,
        )
    wrong = [c for c in run.cases if c.status not in (CaseStatus.PASSED, CaseStatus.SKIPPED)]
    if wrong:
        # Nothing to report is no clean bill when the outputs were wrong: a
        # lab that skips its kernel under a tool shows the tool nothing.
        first = wrong[0]
        return SanitizerRun(
            tool,
            SanitizerStatus.TESTS_FAILED,
            [
                f"{len(wrong)} of {len(run.cases)} tests failed under {tool}, the first "
                f"{first.name} ({first.status}): "
                + (first.failures[0][:500] if first.failures else "")
            ],
            run.output_tail[-3000:],
            seconds,
        )
    return SanitizerRun(tool, SanitizerStatus.CLEAN, [], run.output_tail[-1000:], seconds)
