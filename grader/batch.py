"""`batch`: grade a whole class.

One worker per GPU (CUDA_VISIBLE_DEVICES), each with its own copy of the
instructor's tree and build folder, built once; a submission's fenced code is
written into the worker's lab files and only what changed is recompiled.
Every lab is built and run on its own, with a timeout, so a compile error, a
crash or a hang costs that lab only. Each finished student is written to
OUT/students/<name>/ (result.json, feedback.md, results.json) at once, and a
rerun skips the students whose result is there for the same submission: an
interrupted batch resumes where it stopped.
"""
from __future__ import annotations

import datetime
import json
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import feedback, grade, labmeta, submissions, tools
from .feedback import StudentResult
from .scoring import LabResult
from .sandbox import Limits


@dataclass
class BatchConfig:
    out: Path
    lab_ids: list[str] | None = None
    timeout: float = 600.0
    gpus: list[str] | None = None     # CUDA device ids; default: every GPU nvidia-smi lists
    arch: str = "auto"
    perf: bool = True
    sandbox: bool = False             # build and run each submission in a sandbox (sandbox.py)
    sandbox_limits: Limits | None = None
    slurm: bool = False               # one Slurm job-array task per submission (slurm.py)
    partition: str | None = None
    slurm_args: list[str] | None = None   # more sbatch options, e.g. --account=X
    slots: int = 4                    # Slurm: tasks at once (each slot keeps one build tree)
    wait: bool = True                 # Slurm: wait for the job and write the gradebook


def visible_gpus() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(out.stdout.splitlines()) if line.startswith("GPU ")]


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def load_result(path: Path) -> StudentResult | None:
    try:
        d = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    labs = [LabResult.from_dict(l) for l in d.pop("labs")]
    d.pop("points", None), d.pop("max_points", None)
    return StudentResult(labs=labs, **d)


class Worker:
    """A tree and build folder of the instructor's harness, on one GPU."""

    def __init__(self, root: Path, gpu: str | None, config: BatchConfig):
        self.root, self.gpu, self.config = root, gpu, config
        self.src = root / "src"
        self.build = self.src / "build"
        self.sandbox = None

    def prepare(self, course: labmeta.Course) -> None:
        if not (self.build / "build.ninja").exists():
            submissions.copy_harness(tools.REPO, self.src)  # no slides/: meson skips it
            options = [f"-Dgpu_arch={self.config.arch}", "-Dmutants=disabled"]
            tools.configure(self.build, options, source=self.src)
        # Build the skeletons once: later submissions recompile only their lab files.
        ids = self.config.lab_ids
        for lab in [course.lab(i) for i in ids] if ids else course.labs:
            tools.build(self.build, f"{lab.id}-labs")
        if self.config.sandbox and self.sandbox is None:
            from .sandbox import Sandbox
            self.sandbox = Sandbox(self.config.sandbox_limits, timeout=self.config.timeout)

    def grade(self, spec: str, course: labmeta.Course, labs: list[labmeta.Lab]) -> StudentResult:
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        try:
            sub = submissions.open_submission(spec)
        except ValueError as e:
            return StudentResult(submissions.student_name(spec), spec, "", tools.git_commit(),
                                 now, error=str(e))
        cell = self.sandbox.cell(sub.student) if self.sandbox is not None else None
        try:
            notes = submissions.install(sub, course, tools.REPO / "labs", self.src / "labs")
            result = StudentResult(sub.student, spec, submissions.content_hash(sub, course),
                                   tools.git_commit(), now, notes=notes)
            env = {"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu is not None else {}
            for lab in labs:
                kw = {"sandbox": cell} if cell is not None else {}
                result.labs.append(grade.grade_lab(lab, self.build, impl="labs", repo=self.src,
                                                   timeout=self.config.timeout,
                                                   perf=self.config.perf, env=env, **kw))
            return result
        finally:
            if sub.workdir is not None:
                sub.workdir.cleanup()
            if cell is not None:
                cell.cleanup()

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.cleanup()
            self.sandbox = None


def write_student(students_dir: Path, res: StudentResult) -> None:
    """A student's feedback, Gradescope results and result.json (last: marks done)."""
    d = students_dir / res.student
    _write_atomic(d / "feedback.md", feedback.markdown(res))
    _write_atomic(d / "results.json", json.dumps(feedback.gradescope(res), indent=2))
    _write_atomic(d / "result.json", json.dumps(res.to_dict(), indent=2))


def summary_line(res: StudentResult) -> str:
    bad = [r.lab[:2] + ":" + (r.status if r.status != "graded" else f"{r.tests_failed} failed")
           for r in res.labs if r.status != "graded" or r.tests_failed]
    return (f"{res.student}: {res.points:g}/{res.max_points}"
            + (f" ({', '.join(bad)})" if bad else "") + (f" ERROR {res.error}" if res.error else ""))


def previous_result(spec: str, students_dir: Path, course: labmeta.Course) -> StudentResult | None:
    """The result already written for this submission, if it is for the same content."""
    previous = load_result(students_dir / submissions.student_name(spec) / "result.json")
    if previous is None or previous.error:
        return None
    try:
        sub = submissions.open_submission(spec)
        same = submissions.content_hash(sub, course) == previous.submission_hash
        if sub.workdir:
            sub.workdir.cleanup()
    except ValueError:
        same = False
    return previous if same else None


def run_batch(specs: list[str], config: BatchConfig, progress=print) -> list[StudentResult]:
    if config.slurm:
        from . import slurm
        return slurm.run_batch(specs, config, progress)
    if config.sandbox:
        from .sandbox import SandboxError, available
        ok, why = available()
        if not ok:
            raise SandboxError(f"batch --sandbox: {why}")
    course = labmeta.load()
    labs = [course.lab(i) for i in config.lab_ids] if config.lab_ids else list(course.labs)
    students_dir = config.out / "students"
    gpus = config.gpus if config.gpus is not None else visible_gpus()
    if not gpus:
        progress("[batch] no GPU here: GPU labs will be built but not run; lab 01 is graded")
    workers = [Worker(config.out / "workers" / f"w{i}", gpu, config)
               for i, gpu in enumerate(gpus or [None])]

    # Resume: a student whose result is there, for the same submission, is done.
    todo: queue.Queue[str] = queue.Queue()
    done: list[StudentResult] = []
    for spec in specs:
        previous = previous_result(spec, students_dir, course)
        if previous is not None:
            done.append(previous)
            continue
        todo.put(spec)
    total = len(specs)
    progress(f"[batch] {total} submissions: {len(done)} already graded, {todo.qsize()} to go, "
             f"{len(workers)} worker(s)")
    lock = threading.Lock()
    started = time.time()

    errors: list[BaseException] = []

    def work(worker: Worker) -> None:
        try:
            worker.prepare(course)
        except BaseException as e:  # noqa: BLE001 - reported after the join
            errors.append(e)
            return
        try:
            while True:
                try:
                    spec = todo.get_nowait()
                except queue.Empty:
                    return
                res = worker.grade(spec, course, labs)
                write_student(students_dir, res)
                with lock:
                    done.append(res)
                    progress(f"[batch] {len(done)}/{total} {summary_line(res)}"
                             f"  [{time.time() - started:.0f} s]")
        finally:
            worker.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors and not todo.empty():
        raise errors[0]
    _write_atomic(config.out / "gradebook.csv",
                  feedback.gradebook_csv(done, [lab.id for lab in labs]))
    progress(f"[batch] gradebook: {config.out / 'gradebook.csv'}")
    return done
