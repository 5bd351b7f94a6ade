"""`batch`: grade a whole class.

Several workers per GPU (--jobs-per-gpu), each with its own copy of the
instructor's tree and build folder, built once; a submission's fenced code is
written into the worker's lab files and only what changed is recompiled.
Every lab is built and run on its own, with a timeout, so a compile error, a
crash or a hang costs that lab only.

Workers of one GPU build and run their students' untimed tests side by side;
each student's timed tests wait until that GPU is quiet and run alone (lab
01's until the whole machine is: grader/engine/sharing/gate.py). With one
worker in all, every lab runs its tests in one go.

Before the first student, the first worker of each GPU measures its copy
ceiling (with no student code alive), and the reference solutions are graded
in exactly the setting the students get (reference_check.py): if one does not
pass, the machine is at fault and the batch stops without writing anyone's
grade. After that GPU's last student the ceiling is measured again; a drift
is reported.

Each finished student is written to OUT/students/<id>/ (result.json,
feedback.md, results.json) once everything it ran has ended, and a rerun
skips the students whose result is there for the same submission, graded
with the same options by the same grader: an interrupted batch resumes
where it stopped.
"""

from __future__ import annotations

import functools
import json
import os
import queue
from collections.abc import Callable
import threading
from dataclasses import asdict
from pathlib import Path

from .. import labmeta
from ..engine.sharing import checker_service
from ..engine import feedback, submissions
from ..infra import cpu_busy, gpus, log, store, toolchain
from ..infra.atomic import write_atomic
from ..engine.sharing import sanitizer_places
from ..engine.sharing.gate import Gate, held
from ..results import StudentResult
from . import ceiling_drift, class_report, gradebook
from .config import BatchConfig, BatchError
from ..infra.trace import trace
from .guard import OutLock, check_space, run_workers
from .worker import Worker
from .gpu_group import GpuGroup, SharedPreflight
from .lead_turns import HOST, LeadTurns, check_calibration, wait_at
from .timed_stage import TimedStage
from .pace import Pace


def previous_result(
    spec: str, student: str, students_dir: Path, course: labmeta.Course, config: BatchConfig
) -> StudentResult | None:
    """The result this grader wrote for this submission, if it is for the same
    content, graded with the same options, and complete."""
    previous = store.load_signed(students_dir / student / "result.json")
    if previous is None or previous.error or previous.options != config.fingerprint():
        return None
    try:
        sub = submissions.open_submission(spec, student=student)
        same = submissions.content_hash(sub, course) == previous.submission_hash
        if sub.workdir:
            sub.workdir.cleanup()
    except ValueError:
        same = False
    return previous if same else None


def run_batch(specs: list[str], config: BatchConfig, progress=log.progress) -> list[StudentResult]:
    """Grades on this machine's GPUs. A Slurm batch is slurm.run_batch (slurm builds on
    this module, never the other way round: the CLI picks between the two)."""
    if config.slurm:
        raise ValueError(
            "batch.run_batch grades locally; a Slurm batch goes through slurm.run_batch"
        )
    if config.sandbox:
        from ..infra.bwrap import SandboxError, available

        ok, why = available()
        if not ok:
            raise SandboxError(f"batch --sandbox: {why}")
    course = labmeta.load()
    labs = [course.lab(i) for i in config.lab_ids] if config.lab_ids else list(course.labs)
    ids = submissions.student_ids(specs, config.roster)  # refuses two submissions, one id
    for spec in ids:
        if not submissions.looks_remote(spec) and not os.path.exists(spec):
            raise toolchain.SetupError(f"no such submission: {spec}")
    lock = OutLock(config.out)
    try:
        check_space(config.out)
        return ClassBatch(ids, config, course, labs, progress).run()
    finally:
        lock.release()


class ClassBatch:
    """One batch on this machine, phase by phase (run): the workers made, the
    results already there taken, every worker's thread set up and grading, and
    the class's files written. Its state is what the phases share."""

    def __init__(
        self,
        ids: dict[str, str],
        config: BatchConfig,
        course: labmeta.Course,
        labs: list[labmeta.Lab],
        progress,
    ) -> None:
        self.ids, self.config, self.course, self.labs = ids, config, course, labs
        self.progress = progress
        self.students_dir = config.out / "students"
        self.workers: list[Worker] = []
        self.per_gpu: dict[str | None, int] = {}
        self.todo: queue.Queue[tuple[str, str]] = queue.Queue()
        self.done: list[StudentResult] = []
        self.errors: list[BaseException] = []
        self.report: dict = {"fingerprint": config.fingerprint(), "workers": []}
        self.lock = threading.Lock()
        self.stop = threading.Event()  # set when the batch is interrupted
        # The first worker builds the harness; a worker whose tree is new takes
        # its outputs (seed_build.seed_build) instead of compiling it again.
        self.first_built = threading.Event()
        self.seed: list[Path] = []

    def run(self) -> list[StudentResult]:
        selectors = self._announce()
        self._make_workers(selectors)
        self._take_earlier_results()
        if self.todo.empty():
            self._finish()
            return self.done
        self._start()
        self._run_threads()
        return self._end()

    # Phase 1: what the machine is, said once.
    def _announce(self) -> list[str]:
        config, progress = self.config, self.progress
        selectors = config.gpus if config.gpus is not None else gpus.visible_gpus()
        needs_gpu = any(lab.needs_gpu for lab in self.labs)
        if needs_gpu and config.gpus is None and (line := gpus.visible_note()):
            progress(f"[batch] {line}")
        if needs_gpu and not selectors:
            progress("[batch] no GPU here: GPU labs are built but not run; lab 01 is graded")
        if busy := cpu_busy.busy_note():
            progress(f"[batch] WARNING {busy}")
        if config.sanitizer_places:
            sanitizer_places.set_places(config.sanitizer_places)
            progress(f"[batch] compute-sanitizer runs at once: {sanitizer_places.SANITIZER_SLOTS}")
        return selectors

    # Phase 2: the workers, a group of them per GPU.
    def _make_workers(self, selectors: list[str]) -> None:
        config = self.config
        # Without a GPU (lab 01 only), --jobs-per-gpu is the number of workers.
        groups: list[str | None] = [*selectors] or [None]  # None: no GPU, one group of workers
        auto = gpus.students_per_gpu(len(selectors)) if selectors else 1
        self.per_gpu = {sel: max(1, config.jobs_per_gpu or auto) for sel in groups}
        self.selectors = selectors
        self.shared = sum(self.per_gpu.values()) > 1
        on_host = any(not l.needs_gpu for l in self.labs)
        machine = Gate("machine") if self.shared and on_host else None
        for sel, k in self.per_gpu.items():
            # However many students share a GPU, a few runs use it at once
            # (gpus.runs_at_once: the GPU's time and its memory).
            most = config.gpu_runs or gpus.GPU_RUNS_AT_ONCE
            device = gpus.find(sel) if sel is not None else None
            slots = gpus.runs_at_once(device, most) if device is not None else None
            group = GpuGroup(k, self.shared, slots, config.keep_timed_checkers, device)
            for j in range(k):
                root = config.out / "workers" / f"w{len(self.workers)}"
                self.workers.append(
                    Worker(root, sel, config, group=group, lead=j == 0, machine=machine)
                )
            if self.shared and config.preflight:
                lead = self.workers[-k]
                ours = [l for l in self.labs if lead.gradable(l)]
                group.preflight = SharedPreflight(
                    [l for l in ours if lead.gpu is not None or not l.needs_gpu]
                )

    # Phase 3: the students graded already are done; the others wait.
    def _take_earlier_results(self) -> None:
        if unsigned := store.unsigned(self.students_dir, list(self.ids.values())):
            self.progress(
                f"[batch] regrading {len(unsigned)} result(s) that this grader did not write: "
                + ", ".join(unsigned)
            )
        for spec, student in self.ids.items():
            previous = previous_result(spec, student, self.students_dir, self.course, self.config)
            if previous is not None:
                feedback.write_views(self.students_dir, previous)  # always what the result says
                self.done.append(previous)
            else:
                self.todo.put((spec, student))
        each = (
            f" ({', '.join(map(str, self.per_gpu.values()))} per GPU)"
            if self.selectors
            else " at once"
        )
        self.progress(
            f"[batch] {len(self.ids)} submissions: {len(self.done)} already graded, "
            f"{self.todo.qsize()} to go, {len(self.workers)} worker(s)"
            + (each if self.shared else "")
        )

    # Phase 4: what the worker threads share.
    def _start(self) -> None:
        self.pace = Pace(total=len(self.ids), already=len(self.done), workers=len(self.workers))
        self.pace.write_status(self.config.out / "status.json")
        self.prepared = threading.Barrier(len(self.workers))
        self.leads = [w for w in self.workers if w.lead]
        self.turns = LeadTurns(len(self.leads))
        self.measured = threading.Barrier(len(self.workers))
        self.ready = threading.Barrier(len(self.workers))

    # Phase 5, in each worker's thread: set up, measure, preflight; then grade.
    def _work(self, worker: Worker) -> None:
        try:
            self._set_up(worker)
        except BaseException as e:  # noqa: BLE001 - reported after the join
            self.errors.append(e)
            self.turns.abort()  # a lead that failed never comes to the others
            if (shared := worker.group.preflight) is not None:
                shared.failed.set()  # no worker of its GPU takes another reference
                shared.warmed.set()  # nor waits for a cache it would not fill
        wait_at(self.ready)
        if self.errors:
            worker.close()
            return
        self._grade_students(worker)

    def _set_up(self, worker: Worker) -> None:
        try:
            if worker is self.workers[0]:
                try:
                    if worker.prepare(self.course, self.labs, self.progress):
                        self.seed.append(worker.build)
                finally:
                    self.first_built.set()
            else:
                worker.prepare(self.course, self.labs, self.progress, seed=self._built_seed)
        finally:
            # Every tree built before any ceiling is measured: no compiler
            # may slow the host's copy (lab 01's yardstick).
            wait_at(self.prepared)
        runnable = [l for l in self.labs if worker.gpu is not None or not l.needs_gpu]
        trace(f"{worker.root.name} prepared")
        try:
            if worker.lead:
                # The others of its GPU only wait: the GPU is quiet for these.
                self.turns.measure_before(
                    worker, runnable, self.course, first=worker is self.leads[0]
                )
                check_calibration(worker, self.config)
                if self.config.preflight and not self.shared:
                    worker.preflight(self.course, runnable, self.progress, self.turns)
        finally:
            wait_at(self.measured)  # no worker compiles while a lead measures
        if self.config.preflight and self.shared and not self.errors:
            # The GPU's references, a lab at a time (reference_check.py).
            beside = worker.group.preflight
            worker.preflight(self.course, runnable, self.progress, self.turns, beside)

    def _built_seed(self) -> Path | None:
        """The first worker's build folder once it is built (None: not fresh)."""
        self.first_built.wait()
        return self.seed[0] if self.seed else None

    def _deliver(
        self, worker: Worker, spec: str, student: str, grade: Callable[[], StudentResult | None]
    ) -> None:
        try:
            res = grade()
        except Exception as e:  # noqa: BLE001 - one student's fault is theirs alone
            res = worker.not_graded(spec, student, e)
        if res is None or self.stop.is_set():
            return  # deferred, or graded while its processes were being killed
        feedback.write_student(self.students_dir, res)
        with self.lock:
            self.done.append(res)
            self.pace.add(res)
            self.pace.write_status(self.config.out / "status.json")
            self.progress(
                f"[batch] {len(self.done)}/{len(self.ids)} {res.summary_line()}  "
                + self.pace.progress()
            )

    def _grade_students(self, worker: Worker) -> None:
        # Sharing a GPU, a student's timed parts wait for it in a stage of their
        # own (Worker._grade leaves them there only then, and never in a sandbox).
        stage = TimedStage(worker.root.name)
        try:
            # One checker of each kind for the untimed runs, as the GPU's memory allows.
            kept = worker.group.kept_each if self.config.kept_checkers else 0
            with checker_service.kept(kept):
                while not self.stop.is_set():
                    try:
                        spec, student = self.todo.get_nowait()
                    except queue.Empty:
                        break

                    def later(complete, spec=spec, student=student) -> None:
                        stage.submit(lambda: self._deliver(worker, spec, student, complete))

                    grade = functools.partial(
                        worker.grade_or_defer, spec, student, self.course, self.labs, later
                    )
                    self._deliver(worker, spec, student, grade)
            stage.wait()  # this worker's last students' timed parts
            if worker.group.leave() and "gpu" in worker.ceilings and not self.stop.is_set():
                with held(worker.machine):  # never beside another GPU's lab 01, timed
                    worker.measure_ceilings(self.labs, self.course, "after", sides=("gpu",))
        except BaseException as e:  # noqa: BLE001
            self.errors.append(e)
        finally:
            stage.wait()
            worker.close()

    # Phase 6: a thread per worker; Ctrl-C or SIGTERM stops them all.
    def _run_threads(self) -> None:
        run_workers(
            [(w.root.name, functools.partial(self._work, w)) for w in self.workers], self.stop
        )

    # Phase 7: the host's ceiling again, the drift check, the class's files.
    def _end(self) -> list[StudentResult]:
        leads, errors = self.leads, self.errors
        if self.turns.host_ceiling is not None and not self.stop.is_set() and not errors:
            leads[0].measure_ceilings(self.labs, self.course, "after", sides=(HOST,))
        if errors and not self.done:
            raise (
                errors[0]
                if isinstance(errors[0], toolchain.SetupError)
                else BatchError(f"the batch stopped: {type(errors[0]).__name__}: {errors[0]}")
            )
        self.report["pace"] = self.pace.to_dict()
        self.progress(self.pace.summary())
        self.report["workers"] = [
            {
                "gpu": w.gpu.uuid if w.gpu else None,
                "ceilings": {k: asdict(c) for k, c in w.ceilings.items()},
                "timed_waited_seconds": (
                    round(w.group.gate.waited_seconds, 1) if w.group.gate else 0.0
                ),
            }
            for w in leads
        ]
        out = str(self.config.out)
        if drift := ceiling_drift.report(
            leads, self.done, self.labs, out, self.config.perf, self.progress
        ):
            self.report["ceiling_drift"] = drift
        self._finish()
        if errors:
            raise errors[0]
        return self.done

    def _finish(self) -> None:
        report = self.report
        report["students"] = len(self.done)
        report["not_graded"] = sorted(r.student for r in self.done if r.error)
        results, report["left_out"] = class_report.whole_class(
            self.config.out, self.done, self.progress
        )
        write_atomic(self.config.out / "batch.json", json.dumps(report, indent=2) + "\n")
        gradebook.write(self.config.out, results, self.labs, self.progress, "batch")
