"""`batch`: grade a whole class.

Several workers per GPU (--jobs-per-gpu), each with its own copy of the
instructor's tree and build folder, built once; a submission's fenced code is
written into the worker's lab files and only what changed is recompiled.
Every lab is built and run on its own, with a timeout, so a compile error, a
crash or a hang costs that lab only.

Workers of one GPU build and run their students' untimed tests side by side;
each student's timed tests wait until that GPU is quiet and run alone (lab
01's until the whole machine is: grader/engine/sharing/gate.py). With one worker in all,
every lab runs its tests in one go.

Before the first student, the first worker of each GPU measures its copy
ceiling (with no student code alive) and grades the reference solutions in
exactly the setting the students get (sandbox or not): if the reference does
not pass, the machine is at fault and the batch stops without writing
anyone's grade. After that GPU's last student the ceiling is measured again;
a drift is reported.

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
import signal
from collections.abc import Callable
import threading
import time
from dataclasses import asdict
from pathlib import Path

from .. import labmeta
from ..engine.sharing import checker_service
from ..engine import feedback, submissions
from ..infra import cpu_busy, gpus, proc, store, toolchain
from ..infra.atomic import write_atomic
from ..engine.sharing import sanitizer_places
from ..engine.sharing.gate import Gate, held
from ..results import StudentResult
from . import ceiling_drift, class_report
from .config import CEILING_CALIBRATION_BOUND, BatchConfig, BatchError, Interrupted
from ..infra.trace import trace
from .guard import OutLock, check_space, signals_noted
from .worker import Worker
from .gpu_group import GpuGroup
from .lead_turns import HOST, LeadTurns, wait_at
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


def run_batch(specs: list[str], config: BatchConfig, progress=print) -> list[StudentResult]:
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
        return _run_locked(ids, config, course, labs, progress)
    finally:
        lock.release()


def _run_locked(
    ids: dict[str, str],
    config: BatchConfig,
    course: labmeta.Course,
    labs: list[labmeta.Lab],
    progress,
) -> list[StudentResult]:
    students_dir = config.out / "students"
    selectors = config.gpus if config.gpus is not None else gpus.visible_gpus()
    needs_gpu = any(lab.needs_gpu for lab in labs)
    if needs_gpu and config.gpus is None and (line := gpus.visible_note()):
        progress(f"[batch] {line}")
    if needs_gpu and not selectors:
        progress("[batch] no GPU here: GPU labs are built but not run; lab 01 is graded")
    if busy := cpu_busy.busy_note():
        progress(f"[batch] WARNING {busy}")
    if config.sanitizer_places:
        sanitizer_places.set_places(config.sanitizer_places)
        progress(f"[batch] compute-sanitizer runs at once: {sanitizer_places.SANITIZER_SLOTS}")
    # Without a GPU (lab 01 only), --jobs-per-gpu is the number of workers.
    groups: list[str | None] = [*selectors] or [None]  # None: no GPU, one group of workers
    auto = gpus.students_per_gpu(len(selectors)) if selectors else 1
    per_gpu = {sel: max(1, config.jobs_per_gpu or auto) for sel in groups}
    shared = sum(per_gpu.values()) > 1
    machine = Gate("machine") if shared and any(not l.needs_gpu for l in labs) else None
    workers: list[Worker] = []
    for sel, k in per_gpu.items():
        # However many students share a GPU, a few runs use it at once
        # (gpus.runs_at_once: the GPU's time and its memory).
        most = config.gpu_runs or gpus.GPU_RUNS_AT_ONCE
        device = gpus.find(sel) if sel is not None else None
        slots = gpus.runs_at_once(device, most) if device is not None else None
        group = GpuGroup(k, shared, slots, config.keep_timed_checkers, device)
        for j in range(k):
            workers.append(
                Worker(
                    config.out / "workers" / f"w{len(workers)}",
                    sel,
                    config,
                    group=group,
                    lead=j == 0,
                    machine=machine,
                )
            )

    todo: queue.Queue[tuple[str, str]] = queue.Queue()
    done: list[StudentResult] = []
    if unsigned := store.unsigned(students_dir, list(ids.values())):
        progress(
            f"[batch] regrading {len(unsigned)} result(s) that this grader did not write: "
            + ", ".join(unsigned)
        )
    for spec, student in ids.items():
        previous = previous_result(spec, student, students_dir, course, config)
        if previous is not None:
            feedback.write_views(students_dir, previous)  # always what the result says
            done.append(previous)
        else:
            todo.put((spec, student))
    total = len(ids)
    each = f" ({', '.join(map(str, per_gpu.values()))} per GPU)" if selectors else " at once"
    progress(
        f"[batch] {total} submissions: {len(done)} already graded, {todo.qsize()} to go, "
        f"{len(workers)} worker(s)" + (each if shared else "")
    )
    report: dict = {"fingerprint": config.fingerprint(), "workers": []}
    if todo.empty():
        _finish(config, labs, done, report, progress)
        return done

    # Each worker: set up, measure, preflight; then grade while there is work.
    lock = threading.Lock()
    pace = Pace(total=total, already=len(done), workers=len(workers))
    pace.write_status(config.out / "status.json")
    errors: list[BaseException] = []
    prepared = threading.Barrier(len(workers))
    leads = [w for w in workers if w.lead]
    turns = LeadTurns(len(leads))
    ready = threading.Barrier(len(workers))

    stop = threading.Event()  # set when the batch is interrupted
    # The first worker builds the harness; a worker whose tree is new takes
    # its outputs (seed_build.seed_build) instead of compiling it again.
    first_built = threading.Event()
    seed: list[Path] = []

    def work(worker: Worker) -> None:
        try:
            try:
                if worker is workers[0]:
                    try:
                        if worker.prepare(course, labs, progress):
                            seed.append(worker.build)
                    finally:
                        first_built.set()
                else:
                    first_built.wait()
                    worker.prepare(course, labs, progress, seed=seed[0] if seed else None)
            finally:
                # Every tree built before any ceiling is measured: no compiler
                # may slow the host's copy (lab 01's yardstick).
                wait_at(prepared)
            runnable = [l for l in labs if worker.gpu is not None or not l.needs_gpu]
            trace(f"{worker.root.name} prepared")
            if worker.lead:
                # The others of its GPU only build: the GPU is quiet for these.
                turns.measure_before(worker, runnable, course, first=worker is leads[0])
                _check_calibration(worker, config)
                if config.preflight:  # no lead compiles while another times a reference
                    worker.preflight(course, runnable, progress, turns)
        except BaseException as e:  # noqa: BLE001 - reported after the join
            errors.append(e)
            turns.abort()  # a lead that failed never comes to the others
        wait_at(ready)
        if errors:
            worker.close()
            return

        def deliver(spec: str, student: str, grade: Callable[[], StudentResult | None]) -> None:
            try:
                res = grade()
            except Exception as e:  # noqa: BLE001 - one student's fault is theirs alone
                res = worker.not_graded(spec, student, e)
            if res is None or stop.is_set():
                return  # deferred, or graded while its processes were being killed
            feedback.write_student(students_dir, res)
            with lock:
                done.append(res)
                pace.add(res)
                pace.write_status(config.out / "status.json")
                progress(f"[batch] {len(done)}/{total} {res.summary_line()}  " + pace.progress())

        # Sharing a GPU, a student's timed parts wait for it in a stage of their
        # own (Worker._grade leaves them there only then, and never in a sandbox).
        stage = TimedStage(worker.root.name)
        try:
            # One checker of each kind for the untimed runs, as the GPU's memory allows.
            with checker_service.kept(worker.group.kept_each if config.kept_checkers else 0):
                while not stop.is_set():
                    try:
                        spec, student = todo.get_nowait()
                    except queue.Empty:
                        break

                    def later(complete, spec=spec, student=student) -> None:
                        stage.submit(lambda: deliver(spec, student, complete))

                    grade = functools.partial(
                        worker.grade_or_defer, spec, student, course, labs, later
                    )
                    deliver(spec, student, grade)
            stage.wait()  # this worker's last students' timed parts
            if worker.group.leave() and "gpu" in worker.ceilings and not stop.is_set():
                with held(worker.machine):  # never beside another GPU's lab 01, timed
                    worker.measure_ceilings(labs, course, "after", sides=("gpu",))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            stage.wait()
            worker.close()

    # Each worker sets its event when it is done. The main thread polls the
    # events, not Thread.join: a join interrupted by a signal handler's
    # exception marks a running thread as stopped (CPython 3.11, bpo-45274);
    # and it takes signals as notes (signals_noted), not where they land.
    finished = [threading.Event() for _ in workers]

    def run_worker(worker: Worker, done_event: threading.Event) -> None:
        try:
            work(worker)
        finally:
            done_event.set()

    threads = [
        threading.Thread(target=run_worker, args=(w, e), name=w.root.name)  # trace lines name it
        for w, e in zip(workers, finished)
    ]
    for t in threads:
        t.start()
    with signals_noted() as noted:
        try:
            while not all(event.is_set() for event in finished):
                if noted:
                    raise (
                        KeyboardInterrupt() if noted[0] == signal.SIGINT else Interrupted(noted[0])
                    )
                time.sleep(0.1)
        except BaseException:
            # Ctrl-C or SIGTERM (Interrupted): no new student starts, every
            # process the workers have alive is killed, their temporary folders
            # are removed as they unwind, and what was being graded is not saved.
            stop.set()
            trace("interrupted")  # throughput.py counts the labs graded before this line
            # A process started since the last round dies within 0.1 s, however
            # many workers there are. (Waiting on each worker's event in turn let
            # one live for seconds: docs/decisions.md, "An interrupted batch
            # kills its processes every 0.1 s".)
            while not all(event.is_set() for event in finished):
                proc.kill_all()
                time.sleep(0.1)
            raise
    for t in threads:
        t.join()
    if turns.host_ceiling is not None and not stop.is_set() and not errors:
        leads[0].measure_ceilings(labs, course, "after", sides=(HOST,))  # every worker is done
    if errors and not done:
        raise (
            errors[0]
            if isinstance(errors[0], toolchain.SetupError)
            else BatchError(f"the batch stopped: {type(errors[0]).__name__}: {errors[0]}")
        )
    report["pace"] = pace.to_dict()
    progress(pace.summary())
    report["workers"] = [
        {
            "gpu": w.gpu.uuid if w.gpu else None,
            "ceilings": {k: asdict(c) for k, c in w.ceilings.items()},
            "timed_waited_seconds": round(w.group.gate.waited_seconds, 1) if w.group.gate else 0.0,
        }
        for w in leads
    ]
    if drift := ceiling_drift.report(leads, done, labs, str(config.out), config.perf, progress):
        report["ceiling_drift"] = drift
    _finish(config, labs, done, report, progress)
    if errors:
        raise errors[0]
    return done


def _check_calibration(worker: Worker, config: BatchConfig) -> None:
    c = worker.ceilings.get("gpu")
    if c is None or c.calibrated is None:
        return
    off = abs(c.before - c.calibrated) / c.calibrated
    if off > CEILING_CALIBRATION_BOUND and not config.accept_ceiling:
        raise BatchError(
            f"the copy ceiling measured on {c.device} ({c.before:.0f} GB/s) is {off:.0%} off the "
            f"course's calibration for it ({c.calibrated:.0f} GB/s, grader/labs.toml): the GPU "
            "is busy, throttled or not what it seems. Nobody was graded; fix the machine, or "
            "pass --accept-ceiling to grade against what it measures."
        )


def _finish(
    config: BatchConfig,
    labs: list[labmeta.Lab],
    results: list[StudentResult],
    report: dict,
    progress,
) -> None:
    report["students"] = len(results)
    report["not_graded"] = sorted(r.student for r in results if r.error)
    results, report["left_out"] = class_report.whole_class(config.out, results, progress)
    write_atomic(config.out / "batch.json", json.dumps(report, indent=2) + "\n")
    write_atomic(
        config.out / "gradebook.csv", feedback.gradebook_csv(results, [lab.id for lab in labs])
    )
    progress(
        f"[batch] gradebook: {config.out / 'gradebook.csv'}, "
        f"report: {class_report.write(config.out, results, labs)}"
    )
