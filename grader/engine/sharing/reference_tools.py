"""Whether compute-sanitizer works on this GPU, shown on the reference solution:
what lets a tool that did not finish cleanly on a student's lab cost its points.

A tool's run over a student's lab ends in a finding, a clean bill, or neither:
it timed out, the runner ended abnormally under it, or the lab's outputs were
wrong under it (sanitize.SanitizerStatus.TESTS_FAILED). Neither is the code's
doing only if the tool works here: a sanitizer that a driver update broke would
fail every student. So the first time a lab's tool ends so in a batch, the
same tool runs over the reference solution's runner (kept aside by the
preflight), on the same GPU, through the same gate and sandbox, once per lab
and tool. Where the reference runs clean, the student's run is the code's
doing and costs the lab's points, as a finding does; elsewhere the student
keeps them, and the feedback says why.

Why it matters: the tools run inside the lab's own process, which can tell that
it is watched (a kernel under racecheck runs 10 to 100 times slower) and then
skip the kernel whose race the tool would see, hang, or crash. Each of those
ended without a finding, and cost nothing. A lab that behaves correctly under
the tool, as it behaves outside it, is left alone: the tool is still no
security boundary.

`grade` keeps no reference runner: there a tool that did not finish cleanly
costs nothing, and the note says that the instructor's batch counts it."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from ...status import SanitizerStatus
from ..sanitize import SanitizerRun

# A tool's ending that is neither a finding nor a clean bill.
NOT_FINISHED = (SanitizerStatus.TIMED_OUT, SanitizerStatus.FAILED, SanitizerStatus.TESTS_FAILED)

_WHAT = {
    SanitizerStatus.TIMED_OUT: "did not finish in time",
    SanitizerStatus.FAILED: "ended abnormally",
    SanitizerStatus.TESTS_FAILED: "gave wrong results",
}


class ReferenceTools:
    """The reference's runners of one GPU's workers, and each tool's verdict on
    them, made at most once per lab and tool (workers wait for one another)."""

    def __init__(self) -> None:
        self._runners: dict[str, Path] = {}
        self._verdicts: dict[tuple[str, str], SanitizerStatus] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()

    def keep(self, lab_id: str, runner: Path) -> None:
        """A copy of the reference's runner of `lab_id` beside it (as a timed
        part's, timed_stage.keep_runners), which no student's build touches:
        the preflight's build is the lead worker's own."""
        copy = runner.with_name(f"{runner.name}.reference")
        shutil.copy2(runner, copy)
        with self._lock:
            self._runners[lab_id] = copy

    def verdict(
        self, lab_id: str, tool: str, run: Callable[[Path], SanitizerRun]
    ) -> SanitizerStatus | None:
        """The reference's verdict under `tool`: run(its runner), once; None
        where no runner of it was kept or the run itself raised."""
        key = (lab_id, tool)
        with self._lock:
            runner = self._runners.get(lab_id)
            if runner is None:
                return None
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._verdicts:
                try:
                    self._verdicts[key] = run(runner).status
                except Exception:  # noqa: BLE001 - unknown, so it proves nothing
                    return None
            return self._verdicts[key]


def counts(tool_run: SanitizerRun, reference: SanitizerStatus | None) -> bool:
    """Does a tool's run that did not finish cleanly cost the lab's points?"""
    return tool_run.status in NOT_FINISHED and reference == SanitizerStatus.CLEAN


def hint(tool_run: SanitizerRun) -> str:
    """The student's hint when it does."""
    return (
        f"under compute-sanitizer {tool_run.tool} your lab {_WHAT[tool_run.status]} "
        f"({'; '.join(tool_run.findings[:1])[:500]}), and the reference solution runs "
        f"clean under it on this GPU: code that hangs, crashes or computes something "
        f"else when it runs slower is wrong, and a race the tool would see is "
        f"counted as found"
    )


def note(tool_run: SanitizerRun, reference: SanitizerStatus | None) -> str:
    """The student's note when it does not."""
    why = (
        "the grader kept no reference to check the tool with here (the instructor's "
        "batch does, and there it costs the lab's points)"
        if reference is None
        else f"the reference solution did not run clean under it on this GPU either ({reference})"
    )
    return (
        f"compute-sanitizer {tool_run.tool}: your lab {_WHAT[tool_run.status]} under it "
        f"({'; '.join(tool_run.findings[:1])[:300]}); not counted, since {why}"
    )
