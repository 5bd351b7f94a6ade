"""The leads of a batch in turn (lead_turns.py): one host copy ceiling,
measured alone by one lead and shared by every worker; the preflight's lab 01
timed one lead at a time and before any GPU lab's. Before, each GPU's lead
measured the host's ceiling beside the other's, and on two H200s one GPU's
workers graded lab 01 against a ceiling about two thirds of the other's
(docs/decisions.md, "One host copy ceiling per batch"). Threads and fakes: no
GPU, no build."""

from __future__ import annotations

import threading
import time

from grader.batch.gpu_group import Ceiling
from grader.batch.lead_turns import HOST, LeadTurns

Interval = tuple[str, str, float, float]  # who, what, start, end


class FakeLead:
    """A lead whose ceilings take a while to measure; it logs each measure."""

    def __init__(self, name: str, log: list[Interval], ceiling_of_host: float) -> None:
        self.name, self.log, self.host = name, log, ceiling_of_host
        self.ceilings: dict[str, Ceiling] = {}

    def measure_ceilings(self, labs, course, when, sides=("gpu", "cpu")):
        for side in sides:
            start = time.monotonic()
            time.sleep(0.05)
            c = self.ceilings.setdefault(side, Ceiling(kind=f"checker-{side}"))
            setattr(c, when, self.host if side == HOST else 4000.0)
            self.log.append((self.name, side, start, time.monotonic()))


def _overlap(a: Interval, b: Interval) -> bool:
    return a[2] < b[3] and b[2] < a[3]


def _run_leads(n: int, body) -> None:
    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a lead waits for ever"


def test_one_lead_measures_the_hosts_ceiling_alone_and_every_lead_grades_against_it():
    log: list[Interval] = []
    leads = [FakeLead(f"lead{k}", log, ceiling_of_host=100.0 + k) for k in range(3)]
    turns = LeadTurns(len(leads))
    _run_leads(3, lambda k: turns.measure_before(leads[k], [], None, first=k == 0))

    host = [m for m in log if m[1] == HOST]
    assert [m[0] for m in host] == ["lead0"], log  # measured once, by the first lead
    others = [m for m in log if m is not host[0]]
    assert not any(_overlap(host[0], m) for m in others), log  # with nothing beside it
    assert sum(m[1] == "gpu" for m in log) == 3  # each lead its own GPU's
    shared = leads[0].ceilings[HOST]
    assert all(lead.ceilings[HOST] is shared for lead in leads)
    assert shared.before == 100.0 and turns.host_ceiling is shared
    assert len({id(lead.ceilings["gpu"]) for lead in leads}) == 3


def test_the_preflight_times_host_labs_one_lead_at_a_time_before_any_gpu_lab():
    log: list[Interval] = []
    turns = LeadTurns(2)
    labs = [("01", True), ("04", False), ("07", False)]  # (lab, on the host)

    def preflight(k: int) -> None:
        turns.warmed()
        for lab, on_host in labs:
            with turns.timing(on_host):
                start = time.monotonic()
                time.sleep(0.05)
                log.append((f"lead{k}", lab, start, time.monotonic()))
        turns.past_host()

    _run_leads(2, preflight)
    host = [m for m in log if m[1] == "01"]
    gpu = [m for m in log if m[1] != "01"]
    assert len(host) == 2 and len(gpu) == 4
    assert not _overlap(host[0], host[1]), log
    assert max(m[3] for m in host) <= min(m[2] for m in gpu), log


def test_a_lead_without_a_gpu_lab_still_lets_the_others_past():
    turns = LeadTurns(2)
    done: list[int] = []

    def preflight(k: int) -> None:
        with turns.timing(on_host=True):
            pass
        if k == 1:
            with turns.timing(on_host=False):
                pass
        turns.past_host()  # once a lead, however it got there
        done.append(k)

    _run_leads(2, preflight)
    assert sorted(done) == [0, 1]


def test_a_lead_that_failed_breaks_the_others_waits():
    turns = LeadTurns(2)
    passed: list[int] = []

    def lead(k: int) -> None:
        if k == 0:
            turns.abort()  # as batch.py does when a lead raises
            return
        turns.warmed()
        with turns.timing(on_host=False):
            passed.append(k)

    _run_leads(2, lead)
    assert passed == [1]


def test_one_lead_waits_for_nobody():
    log: list[Interval] = []
    lead = FakeLead("lead0", log, ceiling_of_host=90.0)
    turns = LeadTurns()
    turns.measure_before(lead, [], None, first=True)
    turns.warmed()
    with turns.timing(on_host=True):
        pass
    with turns.timing(on_host=False):
        pass
    assert [m[1] for m in log] == ["gpu", HOST] and lead.ceilings[HOST].before == 90.0


def test_a_batch_on_two_gpus_grades_every_lab_01_against_one_host_ceiling(
    tmp_path, monkeypatch, offline_batch
):
    """Each GPU's lead would read its own host ceiling (here 100 and 60 GB/s, as
    two leads measuring at once have read); the batch measures it once,
    by the first lead, before and after, and every student's lab 01 gets it."""
    from conftest import fake_grade_lab, student_folder

    from grader.batch import orchestrator as batch, config as batch_config, worker as batch_worker
    from grader.engine import lab_grading
    from grader.infra import gpus

    fake = (gpus.Gpu(0, "GPU-a", "0:1", "H", None), gpus.Gpu(1, "GPU-b", "0:2", "H", None))
    monkeypatch.setattr(gpus, "list_gpus", lambda: fake)
    measured: list[tuple[str, str, str]] = []

    def measure(self, labs, course, when, sides=("gpu", "cpu")):
        for side in sides:
            measured.append((self.root.name, side, when))
            c = self.ceilings.setdefault(side, Ceiling(kind=f"checker-{side}"))
            setattr(c, when, (100.0 if self.gpu.uuid == "GPU-a" else 60.0) if side == HOST else 4e3)

    monkeypatch.setattr(batch_worker.Worker, "measure_ceilings", measure)
    ceilings: list[float | None] = []
    graded = fake_grade_lab([])

    def grade_lab(lab, build_dir, **kw):
        ceilings.append(kw["options"].ceiling_gbps)
        return graded(lab, build_dir, **kw)

    monkeypatch.setattr(lab_grading, "grade_lab", grade_lab)
    names = [f"s{k}" for k in range(8)]
    specs = [str(student_folder(tmp_path, s, "  return 42;\n")) for s in names]
    cfg = batch_config.BatchConfig(
        out=tmp_path / "out", lab_ids=["01"], gpus=["0", "1"], jobs_per_gpu=2
    )
    results = batch.run_batch(specs, cfg, progress=lambda *_: None)
    assert sorted(r.student for r in results) == names
    assert {r.gpu for r in results} <= {"GPU-a", "GPU-b"}
    assert ceilings == [100.0] * 8  # one yardstick, whichever GPU's worker graded
    host = [m for m in measured if m[1] == HOST]
    assert host == [("w0", HOST, "before"), ("w0", HOST, "after")], measured


def test_the_hosts_ceiling_is_measured_in_the_hosts_turn():
    """A Slurm task's turns hold the node's lock (node_lock.py) for the host's
    ceiling, not for its GPU's."""
    log: list[Interval] = []
    held: list[str] = []

    class Host:
        def __enter__(self):
            held.append("in")

        def __exit__(self, *exc):
            held.append("out")

    lead = FakeLead("lead0", log, ceiling_of_host=90.0)
    LeadTurns(host=Host()).measure_before(lead, [], None, first=True)
    assert [m[1] for m in log] == ["gpu", HOST] and held == ["in", "out"]
