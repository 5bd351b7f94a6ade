"""A GPU's workers share its preflight (grader/batch/reference_check.py): each
reference is graded once, by whichever worker takes it, after the lead has
filled the policy check's cache; its timed part runs through the gates as a
student's does; one that does not pass stops the batch, and no worker takes
another lab after it."""

import threading
from pathlib import Path

import pytest

from grader import labmeta
from grader.batch import reference_check, timed_stage
from grader.batch.config import BatchConfig, BatchError
from grader.batch.gpu_group import GpuGroup, SharedPreflight
from grader.results import LabResult
from grader.status import LabStatus

COURSE = labmeta.load()
LABS = [COURSE.lab(i) for i in ("01", "04", "07", "11")]


class FakeWorker:
    """What reference_check reads of a worker; its labs are graded by `grade`."""

    def __init__(self, tmp: Path, name: str, group: GpuGroup, lead: bool, failing: str = ""):
        self.src = tmp / name / "src"
        self.build = self.src / "build"
        self.sandbox = None
        self.gpu = None
        self.group = group
        self.machine = None
        self.config = BatchConfig(out=tmp / "out")
        self.reference_fraction = group.reference_fraction
        self.lead = lead
        self.policy_work = tmp / "policy"
        self.failing = failing
        self.graded: list[str] = []
        self.timed: list[str] = []

    def isolation(self, student: str):
        return None

    def _grade_lab(self, lab, cell, timed, sanitize):
        assert sanitize is False and timed == []  # timed later, through the gates
        self.graded.append(lab.id)
        ok = lab.id != self.failing
        r = LabResult(
            lab.id,
            lab.title,
            LabStatus.GRADED,
            points_correctness=lab.points_correctness if ok else 0,
            max_correctness=lab.points_correctness,
            tests_passed=7,
            reason="" if ok else "wrong sum",
        )
        timed.append(lab.id)  # stands for the TimedPart
        return r


@pytest.fixture
def gates(monkeypatch):
    """No compiler, no files: the warm, the install and the timed runs recorded."""
    warmed: list[str] = []
    monkeypatch.setattr(
        reference_check.preflight_warm, "warm", lambda labs, src, *a: warmed.append(src)
    )
    monkeypatch.setattr(reference_check, "install_reference", lambda course, dest: None)
    monkeypatch.setattr(reference_check.ReferenceTools, "keep", lambda self, lab, runner: None)

    def run_parts(parts, cell, gate, machine, pool):
        done = []
        for lab_id in parts:
            full = LabResult(lab_id, "", LabStatus.GRADED, tests_passed=8, fraction=0.5)
            full.max_correctness = full.points_correctness = COURSE.lab(lab_id).points_correctness
            done.append((lab_id, full))
        return done

    monkeypatch.setattr(timed_stage, "run_parts", run_parts)
    return warmed


def _share(workers, shared) -> list[BaseException]:
    errors: list[BaseException] = []

    def one(w):
        try:
            reference_check.share(w, COURSE, lambda *_: None, shared)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=one, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a worker waits for ever"
    return errors


def test_each_reference_is_graded_once_after_the_leads_warm_and_timed_through_the_gates(
    tmp_path, gates
):
    group = GpuGroup(3, shared=True)
    workers = [FakeWorker(tmp_path, f"w{k}", group, lead=k == 0) for k in range(3)]
    shared = SharedPreflight(LABS)
    assert _share(workers, shared) == []
    graded = sorted(lab for w in workers for lab in w.graded)
    assert graded == sorted(lab.id for lab in LABS)
    assert gates == [workers[0].src]  # the lead warms, once
    # The figures are the timed runs' (run_parts), not the untimed ones'.
    assert group.reference_fraction == {lab.id: 0.5 for lab in LABS}


def test_a_reference_that_fails_stops_the_batch_and_every_worker_with_it(
    tmp_path, gates, monkeypatch
):
    group = GpuGroup(2, shared=True)
    lead = FakeWorker(tmp_path, "w0", group, lead=True, failing=LABS[0].id)
    other = FakeWorker(tmp_path, "w1", group, lead=False)
    shared = SharedPreflight(LABS)
    first = shared.next_lab()  # the heaviest, lab 01: the failing one goes first
    assert first is not None and first.id == LABS[0].id
    shared.todo.queue.appendleft(first)

    def timed_failure(parts, cell, gate, machine, pool):  # the timed run keeps the failure
        return [
            (lab_id, LabResult(lab_id, "", LabStatus.GRADED, max_correctness=1, reason="wrong"))
            for lab_id in parts
        ]

    monkeypatch.setattr(timed_stage, "run_parts", timed_failure)
    other.failing = LABS[0].id
    errors = _share([lead, other], shared)
    assert len(errors) == 1 and isinstance(errors[0], BatchError)
    assert "nobody was graded" in str(errors[0])
    assert shared.failed.is_set()
    # No worker took a lab after the failure was seen (at most the one in hand).
    assert len(lead.graded) + len(other.graded) <= 2


def test_a_lead_that_fails_before_warming_leaves_no_worker_waiting(tmp_path, gates):
    group = GpuGroup(2, shared=True)
    other = FakeWorker(tmp_path, "w1", group, lead=False)
    shared = SharedPreflight(LABS)
    shared.failed.set()  # as the batch's error handler sets both
    shared.warmed.set()
    assert _share([other], shared) == []
    assert other.graded == []
