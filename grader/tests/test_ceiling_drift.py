"""A copy ceiling that moved during a batch: the warning and batch.json name
the GPU and the students graded on it (the host's ceiling: every student),
whose performance points need a regrade; each result says which GPU graded it."""

import json

import pytest

from conftest import student_folder

from grader.commands import batch, batch_config, batch_worker
from grader.commands.gpu_group import Ceiling
from grader.infra import store
from grader.results import StudentResult


def _ceilings(side: str, after: float):
    def measure(self, labs, course, when, sides=("gpu", "cpu")):
        if side not in sides:
            return
        c = self.ceilings.setdefault(side, Ceiling(kind="checker-x", device="d"))
        setattr(c, when, 80.0 if when == "before" else after)

    return measure


def _run(tmp_path, monkeypatch, after: float, side: str = "gpu"):
    monkeypatch.setattr(batch_worker.gpus, "visible_gpus", lambda: ["GPU-aaaa"])
    monkeypatch.setattr(batch_worker.Worker, "measure_ceilings", _ceilings(side, after))
    specs = [str(student_folder(tmp_path, s, "  return 42;\n")) for s in ("kay", "lee")]
    messages: list[str] = []
    cfg = batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[])
    batch.run_batch(specs, cfg, progress=messages.append)
    return messages, json.loads((tmp_path / "out" / "batch.json").read_text())


@pytest.mark.parametrize("side", ["gpu", "cpu"])
def test_a_moved_ceiling_names_the_gpu_and_its_students(tmp_path, monkeypatch, offline_batch, side):
    messages, report = _run(tmp_path, monkeypatch, after=40.0, side=side)
    warning = [m for m in messages if "WARNING" in m]
    assert len(warning) == 1 and "2 student(s)" in warning[0]
    # A GPU's ceiling is its own students'; the host's (lab 01) every student's.
    gpu = "GPU-aaaa" if side == "gpu" else ""
    assert ("of GPU GPU-aaaa" in warning[0]) == (side == "gpu")
    assert report["ceiling_drift"] == [
        {"gpu": gpu, "side": side, "before": 80.0, "after": 40.0, "students": ["kay", "lee"]}
    ]
    for s in ("kay", "lee"):
        result = store.load_result(tmp_path / "out" / "students" / s / "result.json")
        assert result is not None and result.gpu == "GPU-aaaa"


def test_a_steady_ceiling_warns_of_nothing(tmp_path, monkeypatch, offline_batch):
    messages, report = _run(tmp_path, monkeypatch, after=79.0)
    assert not [m for m in messages if "WARNING" in m]
    assert "ceiling_drift" not in report


def test_drift_students_are_those_of_the_gpu_or_of_none_known():
    def r(student, gpu):
        return StudentResult(student, "", "", "", "", gpu=gpu)

    done = [r("a", "GPU-1"), r("b", "GPU-2"), r("c", "")]
    assert batch.drift_students(done, "GPU-1") == ["a", "c"]  # c: graded before results said
    assert batch.drift_students(done, "") == ["a", "b", "c"]  # no GPU known: everyone
