"""`slurm-task`: one task of a `batch --slurm` job array, run on a node.

It exists apart from grader/batch/slurm_batch.py because it runs on another
machine, in another process, with nothing of the submitting side but the
manifest that side wrote (OUT/slurm/manifest-*.json): task i grades submission
i of it into OUT/students/<name>/, exactly as a local worker does. At most
`slots` tasks run at once; each holds a slot, a build tree in OUT/slurm/slots/
that is built once and then only recompiles a submission's lab files (a lock
file per slot: two tasks never build in one tree).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from .. import labmeta
from ..engine import feedback, submissions
from ..infra import gpus
from ..infra.node_lock import NodeLock
from ..infra.sandbox import Limits
from . import orchestrator as batch, config as batch_config, worker as batch_worker
from .lead_turns import LeadTurns


def _acquire_slot(sdir: Path, slots: int, index: int):
    """A free build tree: its lock is held for the life of the task (closed on exit)."""
    (sdir / "slots").mkdir(parents=True, exist_ok=True)
    for k in range(slots):
        f = open(sdir / "slots" / f"s{k}.lock", "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return k, f
        except BlockingIOError:
            f.close()
    # Every slot taken (a task of an older job still running): wait for one.
    k = index % slots
    f = open(sdir / "slots" / f"s{k}.lock", "a")
    fcntl.flock(f, fcntl.LOCK_EX)
    return k, f


def run_task(manifest_path: Path, index: int | None = None) -> int:
    """One array task: grade submission `index` of the manifest into OUT/students/."""
    m = json.loads(Path(manifest_path).read_text())
    if index is None:
        index = int(os.environ.get("SLURM_ARRAY_TASK_ID", "0"))
    spec = m["specs"][index]
    out = Path(m["out"])
    config = batch_config.BatchConfig(
        out=out,
        lab_ids=m["lab_ids"],
        timeout=m["timeout"],
        arch=m["arch"],
        perf=m["perf"],
        sandbox=m["sandbox"],
        sandbox_limits=Limits(**m["sandbox_limits"]),
        sanitize=m.get("sanitize", True),
        linked_policy=m.get("linked_policy", True),
        preflight=m.get("preflight", True),
    )
    course = labmeta.load()
    labs = [course.lab(i) for i in config.lab_ids] if config.lab_ids else list(course.labs)
    students = out / "students"
    name = m["ids"][index] if "ids" in m else submissions.student_name(spec)
    host = os.uname().nodename
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    if batch.previous_result(spec, name, students, course, config) is not None:
        print(f"[slurm-task {index}] {name}: already graded", flush=True)
        return 0
    k, lock = _acquire_slot(out / "slurm", max(1, m["slots"]), index)
    print(
        f"[slurm-task {index}] {name} on {host}, slot {k}" + (f", GPU {gpu}" if gpu else ""),
        flush=True,
    )
    try:
        # The GPU is the one Slurm gave the task (CUDA_VISIBLE_DEVICES is inherited).
        # Tasks may share a node: each takes the node's host turn for lab 01 and
        # the ceilings (node_lock.py), as a local batch's workers take the machine gate.
        node = NodeLock()
        turns = LeadTurns(host=node)
        worker = batch_worker.Worker(out / "slurm" / "slots" / f"s{k}", None, config, machine=node)
        worker.prepare(course, labs)
        try:
            runnable = [
                l
                for l in labs
                if not l.needs_gpu or os.environ.get("CUDA_VISIBLE_DEVICES") or gpus.visible_gpus()
            ]
            turns.measure_before(worker, runnable, course, first=True)
            # Once per slot and set of options: the reference passes on this node.
            marker = worker.root / f"preflight-{config.fingerprint()}-{host}"
            if config.preflight and not marker.exists():
                worker.preflight(course, runnable, print, turns)
                marker.touch()
            res = worker.grade(spec, name, course, labs)
        finally:
            worker.close()
        feedback.write_student(students, res)
        print(f"[slurm-task {index}] {res.summary_line()}", flush=True)
        return 1 if res.error else 0
    finally:
        lock.close()
