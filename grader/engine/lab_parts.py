"""The parts of one lab's grading that its steps (lab_grading.py) and a batch
share: the names of the lab's build targets, the results a lab ends in before
its code runs (not gradable here, refused), the seconds of each phase, and the
timed part a batch holds back to run later and alone."""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from .. import labmeta
from ..infra import isolation as isolation_mod
from ..results import BinaryRun, LabResult
from ..status import LabStatus
from .checker_run import CheckerOptions, checker_env, merge_runs, run_checker
from .scoring import score
from .sharing.admission import Admit

# The timed tests (scoring.is_performance names them the same way), and the rest.
TIMED_TESTS = "*Bandwidth*"
UNTIMED_TESTS = "-*Bandwidth*"


def checker_target(lab: labmeta.Lab) -> str:
    return f"checker-{lab.kind}"


def runner_target(lab: labmeta.Lab, impl: str) -> str:
    return f"{lab.id}-runner-{impl}"


def cannot_grade(lab: labmeta.Lab, gpu_count: int, where: str = "this machine") -> str | None:
    """Why `where` (with `gpu_count` GPUs) cannot grade `lab`, in words for the
    student, or None. A machine with no GPU at all is for the callers to report,
    as for every GPU lab."""
    number = lab.id.split("_", 1)[0]
    if lab.needs_gpu and 0 < gpu_count < lab.min_gpus:
        return (
            f"cannot be graded on {where}: lab {number} sums across GPUs and needs "
            f"{lab.min_gpus} or more NVIDIA GPUs with peer access; {where} has "
            f"{gpu_count}. Grade it on a machine with {lab.min_gpus} GPUs or more"
        )
    return None


def new_seed() -> int:
    """The grader chooses every run's seed (and records it): code that runs
    before a test binary's main() cannot pick one that suits it."""
    return secrets.randbits(62)


def blank_result(lab: labmeta.Lab, status: LabStatus, reason: str) -> LabResult:
    return LabResult(
        lab=lab.id,
        title=lab.title,
        status=status,
        reason=reason,
        max_correctness=lab.points_correctness,
        max_performance=lab.points_performance,
        threshold=lab.threshold,
        floor=lab.floor,
    )


def refused(lab: labmeta.Lab, why: str) -> LabResult:
    """A lab of a submission that was refused before anything ran: 0, with the reason."""
    return blank_result(lab, LabStatus.REFUSED, why)


class Phases:
    """Seconds spent in each phase of grading one lab (build, policy, tests,
    sanitizer): what a batch adds up to show where its time went. In a batch
    a GPU lab's tools run in its tests' checker (shared_gpu.tests_then_tools),
    and 'tests' holds both."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - started, 2)


@dataclass
class TimedPart:
    """A lab's timed tests, held back to run later and alone on the GPU (or the
    machine, lab 01), after its other tests passed beside other students'."""

    lab: labmeta.Lab
    result: LabResult  # scored from the untimed tests; completed by run()
    untimed: BinaryRun  # their run
    checker: Path
    runner: Path
    options: CheckerOptions  # the lab's run_checker options: impl, timeout, seed, env, ceiling ...

    def run(self, isolation=None, admit: Admit | None = None) -> LabResult:
        """Runs the timed tests and scores the lab on every test; `isolation` as
        for grade_lab (a sandbox cell, or a fresh Contained when None); `admit`
        as for run_checker (gate.TimedTurn.admit: the GPU alone once the
        processes are up), or None where the GPU is already held."""
        own = isolation is None
        iso = isolation_mod.contained() if own else isolation
        started = time.monotonic()
        options = dataclasses.replace(self.options, gtest_filter=TIMED_TESTS, perf=True)
        try:
            timed = run_checker(
                self.checker,
                self.lab.id,
                # A sandbox gives the runner only the variables its command line
                # sets: those of its checker, never the grader's own shell's.
                iso.runner(self.runner, env=checker_env(options.env, True, self.lab.id)),
                options=options,
                admit=admit,
            )
        finally:
            if own:
                iso.cleanup()
        result = score(self.lab, merge_runs(self.untimed, timed))
        before = self.result
        result.notes = before.notes + [n for n in result.notes if n not in before.notes]
        result.sanitizer, result.timing = before.sanitizer, dict(before.timing)
        result.timing["timed"] = round(time.monotonic() - started, 2)
        return result


def timed_tests_later(lab: labmeta.Lab, result: LabResult) -> bool:
    """Whether a lab graded with its timed tests held back earns a timed run:
    only a lab with every correctness point (a lab that lost them cannot earn
    performance points) and a rubric with performance points."""
    return (
        result.status == LabStatus.GRADED
        and lab.points_performance > 0
        and result.points_correctness == result.max_correctness
    )
