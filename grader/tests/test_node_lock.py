"""The node's host turn across processes (infra/node_lock.py), which Slurm
tasks sharing a node take for lab 01 and the copy ceilings: one holder at a
time, freed when its holder dies, a bounded wait; and a Slurm task's worker
holds it for lab 01 only. Processes and fakes: no GPU, no Slurm."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time

from conftest import student_folder

from grader import labmeta
from grader.batch import config as batch_config, worker as batch_worker
from grader.infra.node_lock import NodeLock


def _hold(path, seconds, log):
    with NodeLock(path, said=lambda *_: None):
        start = time.monotonic()
        time.sleep(seconds)
        log.put((os.getpid(), start, time.monotonic()))


def test_two_processes_take_turns(tmp_path):
    log = multiprocessing.Queue()
    procs = [
        multiprocessing.Process(target=_hold, args=(tmp_path / "turn.lock", 0.3, log))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=30)
    (a_pid, a0, a1), (b_pid, b0, b1) = sorted([log.get(timeout=5), log.get(timeout=5)])
    assert a_pid != b_pid
    assert a1 <= b0 or b1 <= a0, "two holders at once"


def test_a_holder_that_dies_frees_the_turn(tmp_path):
    path = tmp_path / "turn.lock"
    holder = multiprocessing.Process(target=_hold, args=(path, 60, multiprocessing.Queue()))
    holder.start()
    time.sleep(0.5)
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(timeout=10)
    said: list[str] = []
    started = time.monotonic()
    with NodeLock(path, said=said.append, wait_seconds=30):
        pass
    assert time.monotonic() - started < 5 and not any("WARNING" in s for s in said)


def test_a_turn_held_too_long_is_not_waited_for_without_end(tmp_path):
    path = tmp_path / "turn.lock"
    holder = multiprocessing.Process(target=_hold, args=(path, 30, multiprocessing.Queue()))
    holder.start()
    try:
        time.sleep(0.5)
        said: list[str] = []
        started = time.monotonic()
        with NodeLock(path, said=said.append, wait_seconds=1.0):
            pass
        assert 1.0 <= time.monotonic() - started < 5
        assert any("WARNING" in s and "going on without" in s for s in said), said
    finally:
        holder.kill()
        holder.join(timeout=10)


class Recorder:
    """A node lock's sides, each use recorded."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    @contextlib.contextmanager
    def shared(self):
        self.log.append("shared")
        yield

    @contextlib.contextmanager
    def exclusive(self):
        self.log.append("exclusive")
        yield


def test_a_slurm_tasks_worker_holds_the_host_for_lab_01_only(tmp_path, offline_batch):
    """A Slurm task's worker (one worker, its tests timed in place) holds the
    node's turn exclusively for lab 01 and not for a GPU lab."""
    course = labmeta.load()
    labs = [course.lab("01"), course.lab("04")]
    sides: list[str] = []
    config = batch_config.BatchConfig(out=tmp_path / "out", gpus=[])
    worker = batch_worker.Worker(tmp_path / "w", None, config, machine=Recorder(sides))
    worker.prepare(course, labs)
    spec = str(student_folder(tmp_path, "kay", "  return 42;\n"))
    worker.grade(spec, "kay", course, labs)
    assert offline_batch == [lab.id for lab in labs] and sides == ["exclusive", "shared"]
