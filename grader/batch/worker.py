"""A batch's workers: each its own harness tree and build folder, built once; a
submission's fences are written into it and only what changed is recompiled.
Workers of one GPU share a gate and its copy ceiling (GpuGroup, Ceiling)."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import labmeta
from ..labmeta import Course, Lab
from ..engine import harness_tree, hint_ladder, lab_grading, submissions
from ..infra import gpus, log, proc, toolchain
from ..infra.atomic import write_atomic
from ..engine.sharing.gate import Sides, held
from ..infra.trace import trace
from ..results import StudentResult
from ..status import LabStatus
from . import preflight_warm, reference_check, timed_stage
from .reference_check import install_reference
from .seed_build import seed_build
from .config import BatchConfig, BatchError
from .gpu_group import Ceiling, GpuGroup, SharedPreflight
from .lead_turns import LeadTurns

if TYPE_CHECKING:
    # In Worker's signatures `grade` is its method, not the module.
    from ..engine.lab_grading import TimedPart
    from ..infra.sandbox import Sandbox


# Whose GPUs a batch grades with, in cannot_grade's words: each worker holds one
# GPU (CUDA_VISIBLE_DEVICES), so lab 12, whose calls span two GPUs or more, is
# reported not graded in a batch rather than graded on one GPU, where its
# multi-GPU tests would skip. `grader grade 12` on a machine of 2+ GPUs grades it.
BATCH_WORKER = "a batch worker (each holds one GPU)"
SIDES = ("gpu", "cpu")  # the copy ceilings: a GPU's (its labs), the host's (lab 01)
REPO_LABS, NOT_SUBMITTED = toolchain.REPO / "labs", LabStatus.NOT_SUBMITTED


class Worker:
    """A tree and build folder of the instructor's harness, on one GPU."""

    def __init__(
        self,
        root: Path,
        gpu: str | None,
        config: BatchConfig,
        group: GpuGroup | None = None,
        lead: bool = True,
        machine: Sides | None = None,
    ):
        self.root, self.config = root, config
        self.gpu = gpus.find(gpu) if gpu is not None else None
        # A worker without a GPU of its own (a Slurm task: CUDA_VISIBLE_DEVICES
        # names the one Slurm gave it) still expects one when the machine has one.
        self.gpu_expected = self.gpu is not None or (gpu is None and bool(gpus.visible()))
        self.gpu_uuids = self.gpu.uuid if self.gpu is not None else ",".join(gpus.visible_gpus())
        self.src = root / "src"
        self.build = self.src / "build"
        self.sandbox: Sandbox | None = None
        self.group = group or GpuGroup(1, shared=False)
        self.lead = lead  # measures the ceilings, runs the preflight
        self.machine = machine  # the machine gate, when workers share it
        self.ceilings = self.group.ceilings
        self.reference_fraction = self.group.reference_fraction
        # One folder for the batch's workers: the instructor's files compiled for the
        # policy check once a batch (engine/policy/facts_cache.py; the lead's preflight fills it).
        self.policy_work = root.parent / "policy"

    @property
    def gpu_count(self) -> int:
        """The GPU it holds, or (a Slurm task's) those CUDA_VISIBLE_DEVICES leaves."""
        return 1 if self.gpu is not None else len(gpus.visible())

    def gradable(self, lab: labmeta.Lab) -> bool:
        """Not lab 12 (min_gpus 2) on a worker of one GPU: not graded, with the reason."""
        return self.cannot_grade(lab) is None

    def cannot_grade(self, lab: labmeta.Lab) -> str | None:
        return lab_grading.cannot_grade(lab, self.gpu_count, where=BATCH_WORKER)

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu.uuid  # the checker passes it to the runner
        return env

    def prepare(
        self,
        course: labmeta.Course,
        labs: list[labmeta.Lab],
        progress=log.progress,
        seed: Path | Callable[[], Path | None] | None = None,
    ) -> bool:
        """This worker's tree, configured and its harness built; True when made now.
        seed: another worker's fresh build folder, whose outputs it takes
        (seed_build), or what returns it once it is built (called after this
        tree's configure, which needs no seed and so goes beside its build)."""
        # meson writes absolute paths into build.ninja: a worker tree that was
        # copied or moved with its --out would build the original folder's
        # files, another student's code. A tree made elsewhere is made again.
        home = self.root / ".made-at"
        here = str(self.root.resolve())
        if self.src.exists() and (not home.exists() or home.read_text() != here):
            progress(
                f"[batch] {self.root} was made in another folder (a copied or moved "
                "--out): setting it up again"
            )
            shutil.rmtree(self.src)
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomic(home, here)
        fresh = not (self.build / "build.ninja").exists()
        if fresh:
            harness_tree.copy_harness(toolchain.REPO, self.src, skip=(self.config.out,))
            options = [f"-Dgpu_arch={self.config.arch}", "-Dmutants=disabled"]
            toolchain.configure(self.build, options, source=self.src)
            taken = seed() if callable(seed) else seed
            if taken is not None:
                seed_build(taken, self.build, self.src / "labs")
        # A lab this worker cannot grade (lab 12 on one GPU) is built per student
        # only for the compile error it may show.
        checked = [lab for lab in labs if self.gradable(lab)]
        checkers = sorted({lab_grading.checker_target(lab) for lab in checked})
        built = toolchain.build(
            self.build, checkers + [lab_grading.runner_target(l, "labs") for l in checked]
        )
        if checkers and not built.ok and not (self.build / "tests" / checkers[0]).exists():
            raise BatchError(f"the harness does not build in {self.build}:\n{built.first_errors}")
        if self.config.sandbox and self.sandbox is None:
            from ..infra.sandbox import Sandbox

            gpu_env = {"CUDA_VISIBLE_DEVICES": self.gpu.uuid} if self.gpu else {}
            self.sandbox = Sandbox(
                self.config.sandbox_limits,
                timeout=self.config.timeout,
                gpu_node=self.gpu.device_node if self.gpu else None,
                gpu_env=gpu_env,
            )
        return fresh

    def isolation(self, student: str):
        """A sandbox cell, or None (grade_lab makes a contained folder per lab)."""
        return self.sandbox.cell(student) if self.sandbox is not None else None

    def measure_ceilings(self, labs: list[Lab], course: Course, when: str, sides=SIDES) -> None:
        """The copy ceiling with no student process alive: the GPU's for GPU labs
        (through any GPU checker: the same copy), the host's for lab 01; of
        `sides` only (lead_turns.py says who measures which, and when)."""
        kinds = {
            ("gpu" if lab.needs_gpu else "cpu"): lab_grading.checker_target(lab)
            for lab in labs
            if self.gradable(lab)
        }
        for side, target in kinds.items():
            if side not in sides:
                continue
            done = proc.run(
                [str(self.build / "tests" / target), "--measure-ceiling"], timeout=300, env=self.env
            )
            try:
                data = json.loads(done.output.strip().splitlines()[-1])
                gbps = float(data["ceiling_gbps"])
            except (ValueError, IndexError, KeyError, TypeError):
                raise BatchError(
                    f"could not measure the {side} copy ceiling "
                    f"({done.describe()}): {done.output[-300:]}"
                ) from None
            c = self.ceilings.setdefault(side, Ceiling(kind=target, device=data.get("device", "")))
            setattr(c, when, gbps)
            if side == "gpu":
                c.calibrated = course.ceilings.get(c.device)

    def preflight(
        self,
        course: labmeta.Course,
        labs: list[labmeta.Lab],
        progress=log.progress,
        turns: LeadTurns | None = None,
        beside: SharedPreflight | None = None,
    ) -> None:
        """The reference solutions, graded as a student's would be: each must get
        every correctness point here, or the batch stops. `turns`: the batch's
        leads, waited for before each timing (lead_turns.py). `beside`: the
        GPU's references, which its workers share (reference_check.py); else
        this lead grades them in turn, the machine quiet."""
        if beside is not None:
            reference_check.share(self, course, progress, beside)
            return
        turns = turns or LeadTurns()
        install_reference(course, self.src / "labs")
        ours = [lab for lab in labs if self.gradable(lab)]
        work = self.policy_work if self.config.linked_policy else None
        preflight_warm.warm(ours, self.src, self.build, work, self.sandbox is None, progress)
        turns.warmed()
        cell = self.isolation("reference-preflight")
        try:
            for lab in sorted(ours, key=lambda lab: lab.needs_gpu):  # the host's first
                with turns.timing(on_host=not lab.needs_gpu):
                    self._check_reference(lab, cell, progress)
            turns.past_host()
        finally:
            if cell is not None:
                cell.cleanup()

    def _check_reference(self, lab: labmeta.Lab, cell, progress) -> None:
        """Timed in place, the machine quiet (reference_check.judge says what passes)."""
        reference_check.judge(self, lab, self._grade_lab(lab, cell, sanitize=False), progress)

    def new_result(self, spec: str, student: str, **fields) -> StudentResult:
        """A student's result as this batch starts it, with `fields`."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        return StudentResult(
            student,
            spec,
            "",
            toolchain.git_commit(),
            now,
            options=self.config.fingerprint(),
            gpu=self.gpu_uuids,
            **fields,
        )

    def not_graded(self, spec: str, student: str, e: Exception) -> StudentResult:
        return self.new_result(spec, student, error=f"not graded: {type(e).__name__}: {e}")

    def grade(
        self, spec: str, student: str, course: labmeta.Course, labs: list[labmeta.Lab]
    ) -> StudentResult:
        result = self.grade_or_defer(spec, student, course, labs)
        assert result is not None  # nothing deferred without `later`
        return result

    def grade_or_defer(
        self,
        spec: str,
        student: str,
        course: labmeta.Course,
        labs: list[labmeta.Lab],
        later: Callable[[Callable[[], StudentResult]], None] | None = None,
    ) -> StudentResult | None:
        """The student's result; None when its timed parts went to `later`
        (given what runs them and completes the result: timed_stage)."""
        started = time.monotonic()
        result, timed = self._grade(spec, student, course, labs, defer=later is not None)

        def stamped(done: StudentResult) -> StudentResult:
            done.seconds = round(time.monotonic() - started, 1)
            return done

        if not timed:
            return stamped(result)
        assert later is not None  # _grade leaves timed parts only to a `later`
        kept = timed_stage.keep_runners(timed)  # the next student's build replaces them

        def complete() -> StudentResult:
            try:
                return stamped(self._finish(result, kept, None))
            finally:
                timed_stage.drop_runners(kept)

        later(complete)
        return None

    def _finish(self, result: StudentResult, timed: list[TimedPart], cell) -> StudentResult:
        """The student's timed parts run, and the result completed."""
        self._run_timed(timed, result, cell)
        trace(f"{self.root.name} {result.student}: done")
        errors = [
            f"{r.lab}: {' '.join(r.reason.split())}"  # one line: progress, gradebook
            for r in result.labs
            if r.status == LabStatus.ERROR
        ]
        if errors:
            result.error = "not graded (a fault of the machine or the grader): " + "; ".join(errors)
        return result

    def _grade(
        self,
        spec: str,
        student: str,
        course: labmeta.Course,
        labs: list[labmeta.Lab],
        defer: bool = False,
    ) -> tuple[StudentResult, list[TimedPart]]:
        """The student graded but for the timed parts it returns (left for later
        only when `defer` allows it and no cell holds them)."""
        try:
            sub = submissions.open_submission(spec, student=student)
        except ValueError as e:
            # The submission itself is at fault (a link, a FIFO, no labs/ ...): a
            # grade of 0 with the reason, not a fault of the batch.
            refused = [lab_grading.refused(lab, str(e)) for lab in labs]
            return self.new_result(
                spec, student, labs=refused, notes=[f"submission refused: {e}"]
            ), []
        cell = self.isolation(student)
        try:
            absent = submissions.not_submitted(sub, labs)  # nothing built or run for them
            notes = submissions.install(sub, course, REPO_LABS, self.src / "labs", labs)
            if absent:
                notes.append(f"not submitted (no folder): {', '.join(lab.id for lab in absent)}")
            result = self.new_result(spec, student, notes=notes + sub.answer_notes)
            result.answers = sub.answers
            result.submission_hash = submissions.content_hash(sub, course)
            result.hints_taken = hint_ladder.taken_by(sub, [lab.id for lab in labs])
            # Sharing a GPU, the timed tests wait for the end of the student and
            # run together, alone: the GPU falls quiet once per student, not per lab.
            timed: list[TimedPart] | None = [] if self.group.gate is not None else None
            for lab in labs:
                if lab in absent:
                    result.labs.append(lab_grading.blank_result(lab, NOT_SUBMITTED, "no folder"))
                    continue
                # Timed in place (no GPU group's stage: a Slurm task), lab 01 holds the host.
                with held(self.machine, self.group.gate is None and not lab.needs_gpu):
                    result.labs.append(self._grade_lab(lab, cell, timed))
                trace(
                    f"{self.root.name} {student} {lab.id}: {result.labs[-1].status} "
                    f"{result.labs[-1].timing}"
                )
            trace(f"{self.root.name} {student}: {len(timed or [])} timed part(s) wait")
            if defer and cell is None and timed:
                return result, timed
            return self._finish(result, timed or [], cell), []
        finally:
            if sub.workdir is not None:
                sub.workdir.cleanup()
            if cell is not None:
                cell.cleanup()

    def _grade_lab(
        self,
        lab: labmeta.Lab,
        cell,
        timed: list[TimedPart] | None = None,
        sanitize: bool | None = None,
    ):
        """The lab graded in this worker's tree, as for a student; the preflight
        grades the reference the same way, without the sanitizer."""
        ceiling = self.ceilings.get("gpu" if lab.needs_gpu else "cpu")
        options = lab_grading.GradeOptions(
            repo=self.src,
            timeout=self.config.timeout,
            perf=self.config.perf,
            env=self.env,
            sanitize=self.config.sanitize if sanitize is None else sanitize,
            isolation=cell,
            gpu_expected=self.gpu_expected,
            ceiling_gbps=ceiling.before if ceiling else None,
            linked_policy=self.config.linked_policy,
            policy_work=self.policy_work,
            gate=self.group.gate,
            timed_later=timed,
            gpu_count=self.gpu_count,
            where=BATCH_WORKER,
            shared_call_timeout=self.config.shared_call_timeout,
            gpu_connections=self.config.gpu_connections,
            reference_tools=self.group.reference_tools,
        )
        r = lab_grading.grade_lab(lab, self.build, options=options)
        r.reference_fraction = self.reference_fraction.get(lab.id)
        return r

    def _run_timed(self, parts: list[TimedPart], result: StudentResult, cell) -> None:
        """The student's held-back timed tests (timed_stage.run_parts), each lab's result full."""
        g = self.group
        done = timed_stage.run_parts(parts, cell, g.gate, self.machine, g.timed_checkers)
        for part, full in done:
            full.reference_fraction = self.reference_fraction.get(part.lab.id)
            result.labs = [full if r.lab == part.lab.id else r for r in result.labs]

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.cleanup()
            self.sandbox = None
