"""A copy ceiling that moved during a batch: the warning names the students
whose labs were timed against it and the command that regrades them, and
batch.json lists them; a move within a quiet machine's spread, a batch that
scored no performance, or a ceiling nobody was timed against says nothing."""

import json

import pytest

from conftest import fake_grade_lab, student_folder

from grader.batch import (
    orchestrator as batch,
    config as batch_config,
    worker as batch_worker,
    ceiling_drift,
)
from grader.batch.gpu_group import Ceiling
from grader.engine import lab_grading
from grader.infra import store
from grader.results import LabResult, StudentResult


def _ceilings(side: str, after: float):
    def measure(self, labs, course, when, sides=("gpu", "cpu")):
        if side not in sides:
            return
        c = self.ceilings.setdefault(side, Ceiling(kind="checker-x", device="d"))
        setattr(c, when, 80.0 if when == "before" else after)

    return measure


def _timed(monkeypatch):
    """grade_lab's stand-in, with a fraction measured where perf is on."""
    graded = fake_grade_lab([])

    def grade_lab(lab, build_dir, **kw):
        r = graded(lab, build_dir, **kw)
        r.fraction = 0.5 if kw["options"].perf else None
        return r

    monkeypatch.setattr(lab_grading, "grade_lab", grade_lab)


def _run(tmp_path, monkeypatch, after: float, side: str = "gpu", perf: bool = True):
    monkeypatch.setattr(batch_worker.gpus, "visible_gpus", lambda: ["GPU-aaaa"])
    monkeypatch.setattr(batch_worker.Worker, "measure_ceilings", _ceilings(side, after))
    _timed(monkeypatch)
    specs = [str(student_folder(tmp_path, s, "  return 42;\n")) for s in ("kay", "lee")]
    messages: list[str] = []
    cfg = batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[], perf=perf)
    batch.run_batch(specs, cfg, progress=messages.append)
    return messages, json.loads((tmp_path / "out" / "batch.json").read_text())


def test_a_moved_host_ceiling_names_the_students_and_the_regrade(
    tmp_path, monkeypatch, offline_batch
):
    messages, report = _run(tmp_path, monkeypatch, after=40.0, side="cpu")
    warning = [m for m in messages if "WARNING" in m]
    assert len(warning) == 1 and "2 student(s)" in warning[0] and "kay, lee" in warning[0]
    out = tmp_path / "out"
    assert f"rm -r {out}/students/kay {out}/students/lee && python3 -m grader" in warning[0]
    assert report["ceiling_drift"] == [
        {"gpu": "", "side": "cpu", "before": 80.0, "after": 40.0, "students": ["kay", "lee"]}
    ]
    for s in ("kay", "lee"):
        result = store.load_result(out / "students" / s / "result.json")
        assert result is not None and result.gpu == "GPU-aaaa"


def test_a_gpu_ceiling_nobody_was_timed_against_warns_of_nothing(
    tmp_path, monkeypatch, offline_batch
):
    messages, report = _run(tmp_path, monkeypatch, after=40.0, side="gpu")  # lab 01 only
    assert not [m for m in messages if "WARNING" in m]
    assert report["ceiling_drift"][0]["students"] == []


@pytest.mark.parametrize("after", [79.0, 70.0, 92.0])  # the host's quiet spread: within 25%
def test_a_quiet_machines_spread_warns_of_nothing(tmp_path, monkeypatch, offline_batch, after):
    messages, report = _run(tmp_path, monkeypatch, after=after, side="cpu")
    assert not [m for m in messages if "WARNING" in m]
    assert "ceiling_drift" not in report


def test_no_performance_scored_no_warning(tmp_path, monkeypatch, offline_batch):
    messages, report = _run(tmp_path, monkeypatch, after=40.0, side="cpu", perf=False)
    assert not [m for m in messages if "WARNING" in m]
    assert "ceiling_drift" not in report


def test_the_gpu_spread_is_tighter_than_the_hosts():
    c = Ceiling(kind="k", before=100.0, after=85.0)
    assert ceiling_drift.moved("gpu", c) and not ceiling_drift.moved("cpu", c)


def test_timed_students_are_those_of_the_side_and_gpu():
    def r(student, gpu, lab, fraction=0.5):
        res = StudentResult(student, "", "", "", "", gpu=gpu)
        res.labs = [LabResult(lab=lab, title="", status="graded", fraction=fraction)]
        return res

    done = [
        r("a", "GPU-1", "04_x"),
        r("b", "GPU-2", "04_x"),
        r("c", "", "04_x"),  # graded before results named their GPU: counts everywhere
        r("d", "GPU-1", "04_x", fraction=None),  # not timed
        r("e", "GPU-1", "01_cpu_baseline"),
    ]
    host = {"01_cpu_baseline"}
    assert ceiling_drift.timed_students(done, "gpu", "GPU-1", host) == ["a", "c"]
    assert ceiling_drift.timed_students(done, "cpu", "", host) == ["e"]
