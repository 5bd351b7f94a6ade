"""A lab whose folder the submission lacks is reported not submitted at once:
nothing built or run for it, one note for the student, and under --lab only
the labs graded are spoken of."""

import shutil

from conftest import student_folder

from grader import labmeta
from grader.batch import orchestrator as batch, config as batch_config
from grader.engine import feedback
from grader.status import LabStatus

COURSE = labmeta.load()


def _only_lab01(tmp_path, name):
    root = student_folder(tmp_path, name, "  return 42;\n")
    for lab in COURSE.labs:
        if lab.id != "01_cpu_baseline":
            shutil.rmtree(root / "labs" / lab.id)
    return root


def test_missing_labs_cost_nothing_and_get_one_note(tmp_path, offline_batch):
    spec = str(_only_lab01(tmp_path, "ann"))
    config = batch_config.BatchConfig(out=tmp_path / "out", gpus=[])
    (res,) = batch.run_batch([spec], config, progress=lambda *_: None)
    assert offline_batch == ["01_cpu_baseline"]  # nothing else built or run
    by_lab = {r.lab: r for r in res.labs}
    assert by_lab["01_cpu_baseline"].status == LabStatus.GRADED
    others = [r for r in res.labs if r.lab != "01_cpu_baseline"]
    assert others and all(r.status == LabStatus.NOT_SUBMITTED and r.points == 0 for r in others)
    about = [n for n in res.notes if "not submitted" in n or "missing" in n]
    assert len(about) == 1 and "06_grid_stride_shared" in about[0], res.notes
    assert "not submitted: the submission has no folder" in feedback.markdown(res)
    # A 0 that counts: the total's denominator holds every lab, the cell says why.
    lab06 = by_lab["06_grid_stride_shared"]
    assert lab06.measured_max == lab06.max_points > 0
    row = next(
        r
        for r in feedback.gradebook_csv([res], [l.id for l in COURSE.labs]).splitlines()
        if r.startswith("ann,")
    )
    assert "not submitted" in row
    gs = {t["name"]: t for t in feedback.gradescope(res)["tests"]}
    assert gs["06_grid_stride_shared correctness"]["max_score"] > 0
    assert "not submitted" in gs["06_grid_stride_shared correctness"]["output"]


def test_lab_option_limits_the_notes_to_the_labs_graded(tmp_path, offline_batch):
    spec = str(_only_lab01(tmp_path, "bo"))
    config = batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[])
    (res,) = batch.run_batch([spec], config, progress=lambda *_: None)
    assert [r.lab for r in res.labs] == ["01_cpu_baseline"]
    assert not [n for n in res.notes if "not submitted" in n or "missing" in n], res.notes
