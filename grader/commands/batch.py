"""`batch`: grade a whole class.

Several workers per GPU (--jobs-per-gpu), each with its own copy of the
instructor's tree and build folder, built once; a submission's fenced code is
written into the worker's lab files and only what changed is recompiled.
Every lab is built and run on its own, with a timeout, so a compile error, a
crash or a hang costs that lab only.

Workers of one GPU build and run their students' untimed tests side by side;
each student's timed tests wait until that GPU is quiet and run alone (lab
01's until the whole machine is: grader/infra/gate.py). With one worker in all,
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

import datetime
import fcntl
import hashlib
import json
import os
import queue
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import labmeta
from ..engine import feedback, lab_grading, submissions
from ..infra import gpus, proc, store, toolchain
from ..infra.atomic import write_atomic
from ..infra.gate import Gate, held
from ..infra.sandbox import Limits
from ..results import StudentResult
from ..status import LabStatus
from . import class_report
from .pace import Pace

if TYPE_CHECKING:
    # In Worker's signatures `grade` is its method, not the module.
    from ..engine.lab_grading import TimedPart
    from ..infra.sandbox import Sandbox

# A batch's ceiling may differ from the course's calibration by this much
# (another GPU of the same model, a warmer room) and from its own first
# measurement by the second (something else ran on the GPU meanwhile).
CEILING_CALIBRATION_BOUND = 0.15
CEILING_DRIFT_BOUND = 0.10


class BatchError(toolchain.SetupError):
    """The batch cannot grade here; nobody's grade was written. exit_code 3."""


@dataclass
class BatchConfig:
    out: Path
    lab_ids: list[str] | None = None
    timeout: float = 600.0
    gpus: list[str] | None = None     # nvidia-smi indices or UUIDs; default: every GPU
    arch: str = "auto"
    perf: bool = True
    sandbox: bool = False             # the runner in bubblewrap (sandbox.py)
    sandbox_limits: Limits | None = None
    sanitize: bool = True             # small cases under compute-sanitizer (GPU labs)
    linked_policy: bool = True        # off only in the attack suite, to test the rest alone
    roster: dict[str, str] | None = None  # submission -> student id
    preflight: bool = True            # grade the reference in this setting first
    accept_ceiling: bool = False      # grade even when the ceiling is off the calibration
    slurm: bool = False               # one Slurm job-array task per submission (slurm.py)
    partition: str | None = None
    slurm_args: list[str] | None = None   # more sbatch options, e.g. --account=X
    slots: int = 4                    # Slurm: tasks at once (each slot keeps one build tree)
    wait: bool = True                 # Slurm: wait for the job and write the gradebook
    jobs_per_gpu: int = 1             # students graded at once per GPU (grader/infra/gate.py)

    def fingerprint(self) -> str:
        """What a result depends on besides the submission: a result graded with
        other options, another grader or another course file is not reused."""
        parts = {"labs": sorted(self.lab_ids or []), "perf": self.perf,
                 "sandbox": self.sandbox, "sanitize": self.sanitize, "arch": self.arch,
                 "policy": self.linked_policy,
                 "limits": asdict(self.sandbox_limits or Limits()),
                 "grader": toolchain.git_commit(),
                 "labs_toml": hashlib.sha256(labmeta.LABS_TOML.read_bytes()).hexdigest()[:16]}
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def visible_gpus() -> list[str]:
    return [g.uuid for g in gpus.list_gpus()]


def load_result(path: Path) -> StudentResult | None:
    return store.load_result(path)


def write_student(students_dir: Path, res: StudentResult) -> str:
    return feedback.write_student(students_dir, res)


@dataclass
class Ceiling:
    kind: str                       # checker kind it was measured with
    before: float = 0.0
    after: float = 0.0
    calibrated: float | None = None
    device: str = ""

    def drifted(self) -> bool:
        return bool(self.before and self.after and
                    abs(self.after - self.before) > CEILING_DRIFT_BOUND * self.before)


class GpuGroup:
    """What the workers of one GPU share: its gate, the copy ceilings its first
    worker measured, the reference's fractions from that worker's preflight,
    and how many of them are still grading (the last one measures again)."""

    def __init__(self, workers: int, shared: bool) -> None:
        self.gate = Gate("gpu") if shared else None
        self.ceilings: dict[str, Ceiling] = {}
        self.reference_fraction: dict[str, float | None] = {}   # lab id -> preflight's figure
        self.grading = workers
        self.lock = threading.Lock()

    def leave(self) -> bool:
        """One worker is done; True for the last."""
        with self.lock:
            self.grading -= 1
            return self.grading == 0


class Worker:
    """A tree and build folder of the instructor's harness, on one GPU."""

    def __init__(self, root: Path, gpu: str | None, config: BatchConfig,
                 group: GpuGroup | None = None, lead: bool = True,
                 machine: Gate | None = None):
        self.root, self.config = root, config
        self.gpu = gpus.find(gpu) if gpu is not None else None
        # A worker without a GPU of its own (a Slurm task: CUDA_VISIBLE_DEVICES
        # names the one Slurm gave it) still expects one when the machine has one.
        self.gpu_expected = self.gpu is not None or (gpu is None and bool(gpus.list_gpus()))
        self.src = root / "src"
        self.build = self.src / "build"
        self.sandbox: Sandbox | None = None
        self.group = group or GpuGroup(1, shared=False)
        self.lead = lead                 # measures the ceilings, runs the preflight
        self.machine = machine           # the machine gate, when workers share it
        self.ceilings = self.group.ceilings
        self.reference_fraction = self.group.reference_fraction

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu.uuid  # the checker passes it to the runner
        return env

    def prepare(self, course: labmeta.Course, labs: list[labmeta.Lab], progress=print) -> None:
        # meson writes absolute paths into build.ninja: a worker tree that was
        # copied or moved with its --out would build the original folder's
        # files, another student's code. A tree made elsewhere is made again.
        home = self.root / ".made-at"
        here = str(self.root.resolve())
        if self.src.exists() and (not home.exists() or home.read_text() != here):
            progress(f"[batch] {self.root} was made in another folder (a copied or moved "
                     "--out): setting it up again")
            shutil.rmtree(self.src)
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomic(home, here)
        if not (self.build / "build.ninja").exists():
            submissions.copy_harness(toolchain.REPO, self.src)  # no slides/, no solutions/
            options = [f"-Dgpu_arch={self.config.arch}", "-Dmutants=disabled"]
            toolchain.configure(self.build, options, source=self.src)
        checkers = sorted({lab_grading.checker_target(lab) for lab in labs})
        built = toolchain.build(self.build, checkers + [lab_grading.runner_target(l, "labs") for l in labs])
        if not built.ok and not (self.build / "tests" / checkers[0]).exists():
            raise BatchError(f"the harness does not build in {self.build}:\n{built.first_errors}")
        if self.config.sandbox and self.sandbox is None:
            from ..infra.sandbox import Sandbox
            gpu_env = {"CUDA_VISIBLE_DEVICES": self.gpu.uuid} if self.gpu else {}
            self.sandbox = Sandbox(self.config.sandbox_limits, timeout=self.config.timeout,
                                   gpu_node=self.gpu.device_node if self.gpu else None,
                                   gpu_env=gpu_env)

    def isolation(self, student: str):
        """Where this student's code runs: a sandbox cell, or None (grade_lab
        makes a fresh contained folder per lab)."""
        return self.sandbox.cell(student) if self.sandbox is not None else None

    def measure_ceilings(self, labs: list[labmeta.Lab], course: labmeta.Course,
                         when: str) -> None:
        """The copy ceiling with no student process alive: the GPU's for GPU labs
        (through any GPU checker: the same copy), the host's for lab 01."""
        kinds = {("gpu" if lab.needs_gpu else "cpu"): lab_grading.checker_target(lab) for lab in labs}
        for side, target in kinds.items():
            done = proc.run([str(self.build / "tests" / target), "--measure-ceiling"],
                            timeout=300, env=self.env)
            try:
                data = json.loads(done.output.strip().splitlines()[-1])
                gbps = float(data["ceiling_gbps"])
            except (ValueError, IndexError, KeyError, TypeError):
                raise BatchError(f"could not measure the {side} copy ceiling "
                                 f"({done.describe()}): {done.output[-300:]}") from None
            c = self.ceilings.setdefault(side, Ceiling(kind=target, device=data.get("device", "")))
            setattr(c, when, gbps)
            if side == "gpu":
                c.calibrated = course.ceilings.get(c.device)

    def preflight(self, course: labmeta.Course, labs: list[labmeta.Lab], progress=print) -> None:
        """The reference solutions, graded as a student's would be: each must get
        every correctness point here, or the batch stops."""
        install_reference(course, self.src / "labs")
        cell = self.isolation("reference-preflight")
        try:
            for lab in labs:
                # The linked policy check too: the reference against itself must
                # compile and be judged clean here, or no student's file can be.
                # Timed too: a student's feedback quotes the reference's fraction on
                # this GPU (about 10 s a lab, once per worker).
                side = "gpu" if lab.needs_gpu else "cpu"
                r = lab_grading.grade_lab(lab, self.build, repo=self.src, timeout=self.config.timeout,
                                    perf=self.config.perf, env=self.env, sanitize=False,
                                    isolation=cell, ceiling_gbps=self.ceilings[side].before
                                    if side in self.ceilings else None,
                                    gpu_expected=self.gpu_expected,
                                    linked_policy=self.config.linked_policy,
                                    policy_work=self.root / "policy")
                if r.status != LabStatus.GRADED or r.points_correctness != r.max_correctness:
                    why = r.reason or (r.first_failure.describe() if r.first_failure else "")
                    raise BatchError(
                        f"the reference solution of {lab.id} does not pass on this machine in "
                        f"this setting ({'sandbox' if self.sandbox else 'no sandbox'}"
                        f"{', GPU ' + self.gpu.uuid if self.gpu else ''}): {r.status}: {why}. "
                        "The machine or the grader is at fault; nobody was graded.")
                self.reference_fraction[lab.id] = r.fraction
                progress(f"[batch] preflight {lab.id}: reference passes "
                         f"({r.tests_passed} tests" +
                         (f", {r.fraction:.3f} of the copy ceiling" if r.fraction else "") + ")")
        finally:
            if cell is not None:
                cell.cleanup()

    def grade(self, spec: str, student: str, course: labmeta.Course,
              labs: list[labmeta.Lab]) -> StudentResult:
        started = time.monotonic()
        result = self._grade(spec, student, course, labs)
        result.seconds = round(time.monotonic() - started, 1)
        return result

    def _grade(self, spec: str, student: str, course: labmeta.Course,
               labs: list[labmeta.Lab]) -> StudentResult:
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        try:
            sub = submissions.open_submission(spec, student=student)
        except ValueError as e:
            # The submission itself is at fault (a link, a FIFO, no labs/ ...): a
            # grade of 0 with the reason, not a fault of the batch.
            return StudentResult(student, spec, "", toolchain.git_commit(), now,
                                 labs=[lab_grading.refused(lab, str(e)) for lab in labs],
                                 notes=[f"submission refused: {e}"],
                                 options=self.config.fingerprint())
        cell = self.isolation(student)
        try:
            notes = submissions.install(sub, course, toolchain.REPO / "labs", self.src / "labs")
            result = StudentResult(student, spec, submissions.content_hash(sub, course),
                                   toolchain.git_commit(), now, notes=notes + sub.answer_notes,
                                   options=self.config.fingerprint(), answers=sub.answers)
            ceiling = {side: c.before for side, c in self.ceilings.items()}
            # Sharing a GPU, the timed tests wait for the end of the student and
            # run together, alone: the GPU falls quiet once per student, not per lab.
            timed: list[TimedPart] | None = [] if self.group.gate is not None else None
            for lab in labs:
                with held(self.machine):
                    result.labs.append(self._grade_lab(lab, cell, ceiling, timed))
                _trace(f"{self.root.name} {student} {lab.id}: {result.labs[-1].status} "
                       f"{result.labs[-1].timing}")
            _trace(f"{self.root.name} {student}: {len(timed or [])} timed part(s) wait")
            self._run_timed(timed or [], result, cell)
            _trace(f"{self.root.name} {student}: done")
            errors = [f"{r.lab}: {r.reason}" for r in result.labs if r.status == LabStatus.ERROR]
            if errors:
                result.error = "not graded (a fault of the machine or the grader): " + \
                               "; ".join(errors)
            return result
        finally:
            if sub.workdir is not None:
                sub.workdir.cleanup()
            if cell is not None:
                cell.cleanup()

    def _grade_lab(self, lab: labmeta.Lab, cell, ceiling: dict[str, float],
                   timed: list[TimedPart] | None = None):
        r = lab_grading.grade_lab(
            lab, self.build, repo=self.src, timeout=self.config.timeout,
            perf=self.config.perf, env=self.env, sanitize=self.config.sanitize,
            isolation=cell, gpu_expected=self.gpu_expected,
            ceiling_gbps=ceiling.get("gpu" if lab.needs_gpu else "cpu"),
            linked_policy=self.config.linked_policy, policy_work=self.root / "policy",
            gate=self.group.gate, timed_later=timed)
        r.reference_fraction = self.reference_fraction.get(lab.id)
        return r

    def _run_timed(self, parts: list[TimedPart], result: StudentResult, cell) -> None:
        """The student's held-back timed tests: the GPU labs' alone on this GPU,
        lab 01's alone on the machine; each lab's result replaced by the full one."""
        on_gpu = [t for t in parts if t.lab.needs_gpu]
        on_cpu = [t for t in parts if not t.lab.needs_gpu]
        for group, gates in ((on_gpu, lambda: (held(self.machine), held(self.group.gate, True))),
                             (on_cpu, lambda: (held(self.machine, True), held(None)))):
            if not group:
                continue
            outer, inner = gates()
            with outer, inner:
                for part in group:
                    full = part.run(cell)
                    full.reference_fraction = self.reference_fraction.get(part.lab.id)
                    result.labs = [full if r.lab == part.lab.id else r for r in result.labs]

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.cleanup()
            self.sandbox = None


def install_reference(course: labmeta.Course, dest_labs: Path) -> None:
    """The reference solutions' fences in the worker's lab files (preflight)."""
    sub = submissions.Submission("reference", "solutions", toolchain.REPO / "solutions")
    submissions.install(sub, course, toolchain.REPO / "labs", dest_labs)


def summary_line(res: StudentResult) -> str:
    bad = [r.lab[:2] + ":" + (r.status if r.status != LabStatus.GRADED else f"{r.tests_failed} failed")
           for r in res.labs if r.status != LabStatus.GRADED or r.tests_failed]
    return (f"{res.student}: {res.points:g}/{res.max_points}"
            + (f" ({', '.join(bad)})" if bad else "") + (f" ERROR {res.error}" if res.error else ""))


def previous_result(spec: str, student: str, students_dir: Path, course: labmeta.Course,
                    config: BatchConfig) -> StudentResult | None:
    """The result already written for this submission, if it is for the same
    content, graded with the same options, and complete."""
    previous = store.load_result(students_dir / student / "result.json")
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


# A worker's build tree for every lab is about 300 MB (sm_90); student folders,
# reports and the compiler's temporary files need more beside it.
MIN_FREE_OUT = 1 << 30
MIN_FREE_TMP = 512 << 20


def check_space(out: Path) -> None:
    """A nearly full disk fails builds in ways that read as the student's
    ("nvcc cannot compile programs"): refuse to start instead, in one line."""
    for where, need in ((out, MIN_FREE_OUT), (Path(tempfile.gettempdir()), MIN_FREE_TMP)):
        try:
            free = shutil.disk_usage(where).free
        except OSError as e:
            raise toolchain.SetupError(f"cannot use {where}: {e.strerror}") from None
        if free < need:
            raise toolchain.SetupError(f"{where} has {free >> 20} MB free; a batch needs at least "
                                   f"{need >> 20} MB there: free some space, or use another "
                                   "--out or TMPDIR")


class Interrupted(BaseException):
    """The batch was told to stop (SIGTERM); exit_code is the shell's 128+signal."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.exit_code = 128 + signum


class _Lock:
    """One batch per output folder at a time."""

    def __init__(self, out: Path):
        try:
            out.mkdir(parents=True, exist_ok=True)
            self.file = open(out / ".batch.lock", "a")
        except OSError as e:
            raise toolchain.SetupError(f"cannot use {out} for the batch's output: {e.strerror}") from None
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            raise toolchain.SetupError(f"another batch is writing to {out}: wait for it, or give "
                                   "this one another --out") from None

    def release(self) -> None:
        self.file.close()


def run_batch(specs: list[str], config: BatchConfig, progress=print) -> list[StudentResult]:
    """Grades on this machine's GPUs. A Slurm batch is slurm.run_batch (slurm builds on
    this module, never the other way round: the CLI picks between the two)."""
    if config.slurm:
        raise ValueError("batch.run_batch grades locally; a Slurm batch goes through "
                         "slurm.run_batch")
    if config.sandbox:
        from ..infra.sandbox import SandboxError, available
        ok, why = available()
        if not ok:
            raise SandboxError(f"batch --sandbox: {why}")
    course = labmeta.load()
    labs = [course.lab(i) for i in config.lab_ids] if config.lab_ids else list(course.labs)
    ids = submissions.student_ids(specs, config.roster)   # refuses two submissions, one id
    for spec in ids:
        if not submissions.looks_remote(spec) and not os.path.exists(spec):
            raise toolchain.SetupError(f"no such submission: {spec}")
    lock = _Lock(config.out)
    try:
        check_space(config.out)
        return _run_locked(ids, config, course, labs, progress)
    finally:
        lock.release()


def _run_locked(ids: dict[str, str], config: BatchConfig, course: labmeta.Course,
                labs: list[labmeta.Lab], progress) -> list[StudentResult]:
    students_dir = config.out / "students"
    selectors = config.gpus if config.gpus is not None else visible_gpus()
    needs_gpu = any(lab.needs_gpu for lab in labs)
    if needs_gpu and not selectors:
        progress("[batch] no GPU here: GPU labs are built but not run; lab 01 is graded")
    # Without a GPU (lab 01 only), --jobs-per-gpu is the number of workers.
    groups: list[str | None] = [*selectors] or [None]   # None: no GPU, one group of workers
    per_gpu = {sel: max(1, config.jobs_per_gpu) for sel in groups}
    for sel, k in per_gpu.items():
        if sel is not None and k > gpus.most_jobs(gpus.find(sel)):
            raise BatchError(f"--jobs-per-gpu {k}: GPU {sel} has memory for "
                             f"{gpus.most_jobs(gpus.find(sel))} students' tests at once "
                             f"({gpus.HUGE_CASE_GIB} GiB each)")
    shared = sum(per_gpu.values()) > 1
    machine = Gate("machine") if shared and any(not l.needs_gpu for l in labs) else None
    workers: list[Worker] = []
    for sel, k in per_gpu.items():
        group = GpuGroup(k, shared)
        for j in range(k):
            workers.append(Worker(config.out / "workers" / f"w{len(workers)}", sel, config,
                                  group=group, lead=j == 0, machine=machine))

    todo: queue.Queue[tuple[str, str]] = queue.Queue()
    done: list[StudentResult] = []
    for spec, student in ids.items():
        previous = previous_result(spec, student, students_dir, course, config)
        if previous is not None:
            done.append(previous)
        else:
            todo.put((spec, student))
    total = len(ids)
    progress(f"[batch] {total} submissions: {len(done)} already graded, {todo.qsize()} to go, "
             f"{len(workers)} worker(s)" +
             ((f" ({', '.join(str(k) for k in per_gpu.values())} per GPU)" if selectors
               else " at once") if shared else ""))
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
    ready = threading.Barrier(len(workers))

    stop = threading.Event()   # set when the batch is interrupted

    def work(worker: Worker) -> None:
        try:
            try:
                worker.prepare(course, labs, progress)
            finally:
                # Every tree built before any ceiling is measured: no compiler
                # may slow the host's copy (lab 01's yardstick).
                _wait(prepared)
            runnable = [l for l in labs if worker.gpu is not None or not l.needs_gpu]
            _trace(f"{worker.root.name} prepared")
            if worker.lead:
                # The others of its GPU only build: the GPU is quiet for these.
                worker.measure_ceilings(runnable, course, "before")
                _check_calibration(worker, config)
                if config.preflight:
                    worker.preflight(course, runnable, progress)
        except BaseException as e:  # noqa: BLE001 - reported after the join
            errors.append(e)
        _wait(ready)
        if errors:
            worker.close()
            return
        try:
            while not stop.is_set():
                try:
                    spec, student = todo.get_nowait()
                except queue.Empty:
                    break
                try:
                    res = worker.grade(spec, student, course, labs)
                except Exception as e:  # noqa: BLE001 - one student's fault is theirs alone
                    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
                    res = StudentResult(student, spec, "", toolchain.git_commit(), now,
                                        error=f"not graded: {type(e).__name__}: {e}",
                                        options=config.fingerprint())
                if stop.is_set():
                    break   # graded while its processes were being killed: not a grade
                feedback.write_student(students_dir, res)
                with lock:
                    done.append(res)
                    pace.add(res)
                    pace.write_status(config.out / "status.json")
                    progress(f"[batch] {len(done)}/{total} {summary_line(res)}  "
                             + pace.progress())
            if worker.group.leave() and worker.ceilings and not stop.is_set():
                worker.measure_ceilings([l for l in labs if worker.gpu or not l.needs_gpu],
                                        course, "after")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            worker.close()

    # Each worker sets its event when it is done. The main thread waits on the
    # events, not in Thread.join: a join interrupted by a signal handler's
    # exception marks a running thread as stopped (CPython 3.11, bpo-45274).
    finished = [threading.Event() for _ in workers]

    def run_worker(worker: Worker, done_event: threading.Event) -> None:
        try:
            work(worker)
        finally:
            done_event.set()

    threads = [threading.Thread(target=run_worker, args=(w, e)) for w, e in zip(workers, finished)]
    for t in threads:
        t.start()
    try:
        for event in finished:
            while not event.wait(0.5):
                pass
    except BaseException:
        # Ctrl-C or SIGTERM (Interrupted): no new student starts, every process
        # the workers have alive is killed, their temporary folders are removed
        # as they unwind, and what was being graded is not saved.
        stop.set()
        while not all(event.is_set() for event in finished):
            proc.kill_all()
            for event in finished:
                event.wait(0.2)
        raise
    for t in threads:
        t.join()
    if errors and not done:
        raise errors[0] if isinstance(errors[0], toolchain.SetupError) else \
            BatchError(f"the batch stopped: {type(errors[0]).__name__}: {errors[0]}")
    report["pace"] = pace.to_dict()
    progress(pace.summary())
    report["workers"] = [{"gpu": w.gpu.uuid if w.gpu else None,
                          "ceilings": {k: asdict(c) for k, c in w.ceilings.items()},
                          "timed_waited_seconds": round(w.group.gate.waited_seconds, 1)
                          if w.group.gate else 0.0}
                         for w in workers if w.lead]
    for w in (w for w in workers if w.lead):
        for side, c in w.ceilings.items():
            if c.drifted():
                progress(f"[batch] WARNING: the {side} copy ceiling moved from {c.before:.0f} to "
                         f"{c.after:.0f} GB/s during the batch (more than "
                         f"{CEILING_DRIFT_BOUND:.0%}): something else used the machine; "
                         "regrade the performance points")
                report["ceiling_drift"] = True
    _finish(config, labs, done, report, progress)
    if errors:
        raise errors[0]
    return done


_TRACE_START = time.monotonic()


def _trace(line: str) -> None:
    """With GRADER_TRACE=1: what each worker does when, for a slow batch's post-mortem."""
    if os.environ.get("GRADER_TRACE") == "1":
        print(f"[trace +{time.monotonic() - _TRACE_START:.1f} s] {line}", flush=True)


def _wait(barrier: threading.Barrier) -> None:
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass


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
            "pass --accept-ceiling to grade against what it measures.")


def _finish(config: BatchConfig, labs: list[labmeta.Lab], results: list[StudentResult],
            report: dict, progress) -> None:
    report["students"] = len(results)
    report["not_graded"] = sorted(r.student for r in results if r.error)
    write_atomic(config.out / "batch.json", json.dumps(report, indent=2) + "\n")
    write_atomic(config.out / "gradebook.csv",
                       feedback.gradebook_csv(results, [lab.id for lab in labs]))
    progress(f"[batch] gradebook: {config.out / 'gradebook.csv'}, "
             f"report: {class_report.write(config.out, results, labs)}")
