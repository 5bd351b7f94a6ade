"""The reference solutions, graded before any student: each must get every
correctness point on this machine in this setting, or the batch stops
without writing anyone's grade; the feedback quotes each one's fraction, and
its GPU runner is kept for the sanitizer's verdicts (reference_tools.py).

Where workers share a GPU, they grade the references side by side, a lab
each, as they grade a student's labs: the untimed tests beside the others'
references, the timed ones alone on the GPU (lab 01's alone on the machine),
through the same gates (timed_stage.run_parts). The reference is then timed
as its students are, beside the other workers' compiles. One lead grading
every reference in turn left the GPU's other workers idle for most of the
set-up (see docs/decisions.md, "A GPU's workers share its preflight"). A
worker alone (and a Slurm task) grades them in turn (Worker.preflight)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .. import labmeta
from ..engine import lab_grading, scoring, submissions
from ..infra import toolchain
from ..engine.sharing.gate import Sides, held
from ..engine.sharing.reference_tools import ReferenceTools
from ..results import LabResult
from ..status import LabStatus
from . import preflight_warm, timed_stage
from .config import BatchError
from .gpu_group import GpuGroup, SharedPreflight

if TYPE_CHECKING:
    from ..engine.lab_grading import TimedPart
    from ..infra import gpus
    from ..infra.sandbox import Sandbox
    from .config import BatchConfig


class Worker(Protocol):
    """What a reference's check uses of a batch worker (worker.Worker)."""

    src: Path
    build: Path
    sandbox: Sandbox | None
    gpu: gpus.Gpu | None
    group: GpuGroup
    machine: Sides | None
    config: BatchConfig
    reference_fraction: dict[str, float | None]
    lead: bool
    policy_work: Path

    def isolation(self, student: str): ...

    def _grade_lab(self, lab: labmeta.Lab, cell, timed: list[TimedPart] | None, sanitize: bool): ...


def share(worker: Worker, course: labmeta.Course, progress, shared: SharedPreflight) -> None:
    """`worker`'s part of its GPU's references: a lab at a time, once the
    lead has filled the policy check's cache (the lead fills it)."""
    if worker.lead:
        try:
            work = worker.policy_work if worker.config.linked_policy else None
            preflight_warm.warm(shared.labs, worker.src, worker.build, work, False, progress)
        finally:
            shared.warmed.set()
    else:
        shared.warmed.wait()
    installed = False
    while not shared.failed.is_set() and (lab := shared.next_lab()) is not None:
        if not installed:  # every lab's fence, once: a worker may take several
            install_reference(course, worker.src / "labs")
            installed = True
        try:
            check_beside(worker, lab, progress)
        except BaseException:
            shared.failed.set()  # the others take no further lab
            raise


def check_beside(worker: Worker, lab: labmeta.Lab, progress) -> None:
    """One lab's reference (installed in `worker`'s tree) graded as a
    student's lab is graded in a shared batch, then judged."""
    cell = worker.isolation("reference-preflight")
    try:
        parts: list[TimedPart] = []
        with held(worker.machine):  # as each of a student's labs holds it
            r = worker._grade_lab(lab, cell, parts, sanitize=False)
        g = worker.group
        for _, full in timed_stage.run_parts(parts, cell, g.gate, worker.machine, g.timed_checkers):
            r = full
        judge(worker, lab, r, progress)
    finally:
        if cell is not None:
            cell.cleanup()


def judge(worker: Worker, lab: labmeta.Lab, r: LabResult, progress) -> None:
    """The reference's result, which must hold every correctness point (the
    linked policy check's too: a reference it refuses would refuse every
    student), recorded for the feedback and the sanitizer's verdicts."""
    if r.status != LabStatus.GRADED or r.points_correctness != r.max_correctness:
        why = r.reason or (r.first_failure.describe() if r.first_failure else "")
        raise BatchError(
            f"the reference solution of {lab.id} does not pass on this machine in "
            f"this setting ({'sandbox' if worker.sandbox else 'no sandbox'}"
            f"{', GPU ' + worker.gpu.uuid if worker.gpu else ''}): {r.status}: {why}. "
            "The machine or the grader is at fault; nobody was graded."
        )
    worker.reference_fraction[lab.id] = r.fraction
    if lab.needs_gpu and not lab.spans_gpus:
        with worker.group.lock:
            if worker.group.reference_tools is None:
                worker.group.reference_tools = ReferenceTools()
        runner = worker.build / "tests" / lab_grading.runner_target(lab, "labs")
        worker.group.reference_tools.keep(lab.id, runner)
    of = f", {r.fraction:.3f} of the copy ceiling" if r.fraction else ""
    progress(f"[batch] preflight {lab.id}: reference passes ({r.tests_passed} tests{of})")
    short = scoring.reference_short(r) if worker.config.perf else None
    if short:
        progress(f"[batch] WARNING preflight {lab.id}: {short}")


def install_reference(course: labmeta.Course, dest_labs: Path) -> None:
    """The reference solutions' fences in a worker's lab files."""
    ref = submissions.Submission("reference", "solutions", toolchain.REPO / "solutions")
    submissions.install(ref, course, toolchain.REPO / "labs", dest_labs)
