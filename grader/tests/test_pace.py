"""A batch's pace: the ETA in its progress lines, status.json while it runs,
and where the time went in batch.json."""

import json

from conftest import student_folder

from grader import labmeta
from grader.batch import orchestrator as batch, config as batch_config, pace
from grader.engine import lab_grading
from grader.results import LabResult, StudentResult


def result(timings):
    return StudentResult(
        "s",
        "s",
        "",
        "c",
        "d",
        labs=[
            LabResult(lab=f"0{i}", title="", status="graded", timing=t)
            for i, t in enumerate(timings)
        ],
    )


def test_eta_rate_and_phases(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(pace.time, "monotonic", lambda: clock[0])
    p = pace.Pace(total=10, already=2, workers=2)
    assert p.eta() is None and "to go" not in p.progress()
    clock[0] = 160.0
    p.add(result([{"build": 20.0, "tests": 30.0}, {"build": 10.0, "sanitizer": 5.0}]))
    p.add(result([{"build": 5.0, "tests": 10.0}]))
    # 2 of the 8 to grade in 60 s: 6 left, 30 s each.
    assert p.left == 6 and p.eta() == 180.0
    assert "3 min to go" in p.progress()
    d = p.to_dict()
    assert d["student_labs_now"] == 3 and d["student_labs_per_hour"] == 180.0
    assert d["phase_seconds"] == {"build": 35.0, "policy": 0.0, "tests": 40.0, "sanitizer": 5.0}
    assert d["other_seconds"] == 120.0 - 80.0  # two workers for 60 s, 80 s of it in phases
    assert "3 student-labs in 60 s (180 per hour, 2 worker(s))" in p.summary()


def test_grade_lab_records_its_phases(monkeypatch):
    def fake(ctx, steps):
        with ctx.phases("build"):
            pass
        with ctx.phases("tests"):
            pass
        return LabResult(lab=ctx.lab.id, title=ctx.lab.title, status="graded")

    monkeypatch.setattr(lab_grading, "run_steps", fake)
    r = lab_grading.grade_lab(labmeta.load().lab("01"), None)
    assert set(r.timing) == {"build", "tests"} and all(v >= 0 for v in r.timing.values())


def test_a_batch_writes_its_status_and_pace(tmp_path, offline_batch):
    specs = [str(student_folder(tmp_path, n)) for n in ("ann", "bob", "cy")]
    messages = []
    cfg = batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[])
    batch.run_batch(specs, cfg, progress=messages.append)
    status = json.loads((tmp_path / "out" / "status.json").read_text())
    assert status["submissions"] == 3 and status["graded_now"] == 3 and status["left"] == 0
    report = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert report["pace"]["student_labs_now"] == 3
    assert any("student-labs in" in m and "per hour" in m for m in messages)
    graded = [m for m in messages if m.startswith("[batch] 1/3")]
    assert graded and "to go]" in graded[0]
