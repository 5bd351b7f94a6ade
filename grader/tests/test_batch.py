"""batch: submissions of every kind, fences transplanted, results written,
an interrupted batch resumed, resubmissions regraded."""

import hashlib
import json
import tarfile
import zipfile

import pytest
from conftest import student_folder

from grader import labmeta
from grader.batch import orchestrator as batch, config as batch_config
from grader.engine import feedback, submissions
from grader.infra.toolchain import REPO
from grader.results import StudentResult

COURSE = labmeta.load()
LAB01 = COURSE.lab("01")


def test_folder_zip_and_tar_submissions_open(tmp_path):
    folder = student_folder(tmp_path, "ann")
    z = tmp_path / "bea.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in folder.rglob("*"):
            zf.write(f, "bea" / f.relative_to(folder))
    t = tmp_path / "cid.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        tf.add(folder, arcname="cid")
    for spec, name in ((folder, "ann"), (z, "bea"), (t, "cid")):
        sub = submissions.open_submission(str(spec))
        assert sub.student == name and (sub.labs_dir / "01_cpu_baseline").is_dir()


def test_not_a_submission_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no labs/"):
        submissions.open_submission(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="not a folder"):
        submissions.open_submission(str(tmp_path / "nothing.rar"))


def test_install_keeps_fences_and_restores_the_harness(tmp_path):
    root = student_folder(tmp_path, "dan", "  return 42;\n")
    p = root / "labs" / "01_cpu_baseline" / "cpu_sum.cpp"
    p.write_text(p.read_text().replace("namespace {", "namespace {  // tampered"))
    sub = submissions.open_submission(str(root))
    dest = tmp_path / "dest"
    notes = submissions.install(sub, COURSE, REPO / "labs", dest)
    text = (dest / "01_cpu_baseline" / "cpu_sum.cpp").read_text()
    assert "return 42;" in text and "tampered" not in text
    assert any("outside the fenced regions" in n for n in notes)


def test_batch_writes_gradebook_feedback_and_results(tmp_path, offline_batch):
    specs = [
        str(student_folder(tmp_path, n, "  return 42;\n" if n == "eve" else None))
        for n in ("eve", "fay")
    ]
    config = batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[])
    results = batch.run_batch(specs, config, progress=lambda *_: None)
    assert {r.student: r.points for r in results} == {"eve": LAB01.points_correctness, "fay": 0}
    rows = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()
    assert rows[0] == "student,01_cpu_baseline,total,max,not_measured,notes,result_sha256"
    assert rows[1].startswith(f"eve,{LAB01.points_correctness},")
    # The row carries the digest of the result.json it summarises.
    text = (tmp_path / "out" / "students" / "eve" / "result.json").read_text()
    assert rows[1].endswith("," + hashlib.sha256(text.encode()).hexdigest()[:16])
    gs = json.loads((tmp_path / "out" / "students" / "eve" / "results.json").read_text())
    assert gs["score"] == LAB01.points_correctness
    assert {t["name"] for t in gs["tests"]} == {
        "01_cpu_baseline correctness",
        "01_cpu_baseline performance",
    }
    assert all({"name", "score", "max_score", "output"} <= set(t) for t in gs["tests"])
    md = (tmp_path / "out" / "students" / "fay" / "feedback.md").read_text()
    assert md.startswith("# Feedback for fay") and "01_cpu_baseline" in md


@pytest.mark.parametrize("kept", [True, False])
def test_a_worker_keeps_its_checkers_unless_told_not_to(tmp_path, offline_batch, monkeypatch, kept):
    from grader.engine.sharing import checker_service
    from grader.engine import lab_grading

    seen = []
    grade = lab_grading.grade_lab

    def grade_lab(lab, build_dir, **kw):
        seen.append(checker_service.keeping())
        return grade(lab, build_dir, **kw)

    monkeypatch.setattr(lab_grading, "grade_lab", grade_lab)
    specs = [str(student_folder(tmp_path, n)) for n in ("gus", "hal")]
    config = batch_config.BatchConfig(
        out=tmp_path / "out", lab_ids=["01"], gpus=[], kept_checkers=kept
    )
    batch.run_batch(specs, config, progress=lambda *_: None)
    assert seen == [kept, kept]
    assert not checker_service.keeping()  # the main thread never did


def test_batch_resumes_and_regrades_changed_submissions(tmp_path, offline_batch):
    specs = [str(student_folder(tmp_path, n)) for n in ("gus", "hal", "ida")]
    config = batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[])
    batch.run_batch(specs[:2], config, progress=lambda *_: None)  # "killed" after two
    offline_batch.clear()
    messages = []
    batch.run_batch(specs, config, progress=messages.append)
    assert offline_batch == ["01_cpu_baseline"]  # only ida was graded
    assert any("2 already graded, 1 to go" in m for m in messages)
    p = tmp_path / "subs" / "hal" / "labs" / "01_cpu_baseline" / "cpu_sum.cpp"
    p.write_text(p.read_text().replace('  LAB_TODO_HOST("sum_sequential");\n', "  return 42;\n"))
    offline_batch.clear()
    results = batch.run_batch(specs, config, progress=lambda *_: None)
    assert offline_batch == ["01_cpu_baseline"]  # hal resubmitted
    assert {r.student: r.points for r in results}["hal"] == LAB01.points_correctness
    assert len((tmp_path / "out" / "gradebook.csv").read_text().splitlines()) == 4


def test_gradebook_notes_a_submission_that_could_not_be_opened():
    res = StudentResult("kim", "kim.rar", "", "c", "d", error="not a folder")
    assert "not a folder" in feedback.gradebook_csv([res], ["01_cpu_baseline"])
