"""A lab's checker runs on a GPU that other students' runs share (`batch
--jobs-per-gpu`), and what is done when the GPU was full.

A student's code may allocate most of the GPU's memory (the policy check
refuses the allocation calls, policy.toml's `device_memory`, but a batch may
run with that check off, and an honest student's scratch buffer counts too).
Then a neighbour graded at the same moment fails for no fault of its own: its
runner cannot start ("out of memory"), or the checker cannot allocate a case's
input (a checker_error: not a grade). So a run that shared the GPU and failed
in a way an out-of-memory explains runs once more with the GPU to itself, and
only that run counts; the student's feedback says so. A run alone that still
runs out is judged as it is: nobody else was on the GPU.

A submission that prints "out of memory" on purpose gains a second run alone,
judged the same way: it costs the batch seconds, never a grade."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ..infra.gate import Gate, held, sanitizer_slot
from ..results import BinaryRun, LabResult
from ..status import CaseStatus, SanitizerStatus
from . import sanitize as sanitize_mod

# What the CUDA runtime, the driver, compute-sanitizer and our checker
# (contract_check.cuh's check_huge: "the GPU has N GiB free ... other processes
# hold the rest") write when memory runs out.
_OUT_OF_MEMORY = re.compile(
    r"out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|other processes hold",
    re.IGNORECASE,
)

RERUN_NOTE = (
    "the GPU ran out of memory while other students' tests shared it ({why}); "
    "{what} ran again with the GPU to itself, and only that run counts"
)


def short_of_memory(texts: Iterable[str]) -> str | None:
    """The first of `texts` that says memory ran out, cut to one line, or None."""
    for text in texts:
        found = _OUT_OF_MEMORY.search(text or "")
        if found:
            start = max(0, found.start() - 80)
            return " ".join(text[start : found.end() + 80].split())
    return None


def run_failures(run: BinaryRun) -> list[str]:
    """What a checker run says went wrong: its reason and its failing cases'."""
    failing = [f for c in run.cases if c.status != CaseStatus.PASSED for f in c.failures]
    return [run.reason, *failing]


def checker_sharing(
    gate: Gate | None, run_once: Callable[[], BinaryRun], heavy: bool = True
) -> tuple[BinaryRun, str | None]:
    """run_once() holding `gate` shared; once more holding it alone when that
    run failed for want of memory. Returns the run that counts and, when it was
    the second, the note for the student."""
    with held(gate, heavy=heavy):
        run = run_once()
    why = short_of_memory(run_failures(run)) if gate is not None else None
    if why is None:
        return run, None
    with held(gate, exclusive=True):
        again = run_once()
    return again, RERUN_NOTE.format(why=why, what="your tests")


def sanitize_lab(
    lab,
    checker: Path,
    runner: Path,
    iso,
    result: LabResult,
    *,
    gate: Gate | None,
    env: dict[str, str] | None,
    seed: int,
) -> None:
    """The small cases under each compute-sanitizer tool, into `result`: a
    hazard costs every point. Each tool holds the GPU (shared) for its own run
    only, so that a timed run waiting for the GPU waits for one tool, not three."""
    if not sanitize_mod.available():
        result.sanitizer["all"] = "unavailable"
        return
    for tool in sanitize_mod.RDC_TOOLS if lab.rdc else sanitize_mod.DEFAULT_TOOLS:

        def once(tool: str = tool, alone: bool = False) -> sanitize_mod.SanitizerRun:
            with sanitizer_slot(iso), held(gate, exclusive=alone):
                return sanitize_mod.run_tool(checker, lab.id, runner, iso, tool, env=env, seed=seed)

        tool_run = once()
        why = None
        if gate is not None and tool_run.status in (
            SanitizerStatus.FINDINGS,
            SanitizerStatus.FAILED,
        ):
            why = short_of_memory([*tool_run.findings, tool_run.output_tail])
        if why is not None:
            tool_run = once(alone=True)
            result.notes.append(RERUN_NOTE.format(why=why, what=f"compute-sanitizer {tool}"))
        result.sanitizer[tool_run.tool] = tool_run.status
        if tool_run.status == SanitizerStatus.FINDINGS:
            result.points_correctness = result.points_performance = 0.0
            result.hints.insert(
                0,
                f"compute-sanitizer {tool_run.tool} found a hazard that the "
                f"outputs did not show: " + "; ".join(tool_run.findings[:3]),
            )
