"""Words for what did not happen: a performance test not measured (--no-perf),
a lab not run here (no GPU) or not graded (the machine's fault) is no score,
never a failure or a 0, in the gradebook, the feedback and Gradescope's
results.json alike; and a lab file that is a folder is named as such."""

import csv
import io

from conftest import gpu_lab, student_folder

from grader.engine import feedback, submissions
from grader.engine.scoring import score
from grader.results import BinaryRun, CaseResult, LabResult, StudentResult
from grader.status import LabStatus

LAB = gpu_lab()
SKIPPED_BANDWIDTH = CaseResult("SumBandwidth.FractionOfCopyCeiling", "skipped")


def no_perf(correct: bool = True) -> LabResult:
    """LAB graded under --no-perf: its bandwidth test skipped (LAB_SKIP_PERF)."""
    case = CaseResult("Sum.a", "passed" if correct else "failed")
    return score(LAB, BinaryRun("b", "completed", cases=[case, SKIPPED_BANDWIDTH]), perf=False)


def student(*labs: LabResult) -> StudentResult:
    return StudentResult("amy", "amy", "h", "c", "d", labs=list(labs))


def gradebook_row(res: StudentResult, lab_ids=("04_x",)) -> dict[str, str]:
    return next(csv.DictReader(io.StringIO(feedback.gradebook_csv([res], list(lab_ids)))))


def test_a_correct_lab_under_no_perf_is_6_of_6_with_performance_not_measured():
    r = no_perf()
    assert (r.points, r.unmeasured, r.measured_max) == (6, "--no-perf", 6)
    row = gradebook_row(student(r))
    assert (row["04_x"], row["total"], row["max"]) == ("6", "6", "6")
    assert row["not_measured"] == "04 performance (--no-perf)"
    md = feedback.markdown(student(r))
    assert "Total: **6 / 6**" in md and "performance not measured: --no-perf" in md
    assert "4 of the rubric's points were not counted" in md
    tests = {t["name"]: t for t in feedback.gradescope(student(r))["tests"]}
    perf = tests["04_x performance"]
    assert perf["max_score"] == 0 and "status" not in perf
    assert perf["output"] == "not measured: --no-perf"
    assert tests["04_x correctness"]["status"] == "passed"


def test_a_wrong_lab_under_no_perf_has_the_same_denominator_as_the_class():
    r = no_perf(correct=False)
    assert (r.points, r.measured_max) == (0, 6)
    assert gradebook_row(student(r))["max"] == "6"


def test_a_measured_lab_keeps_its_rubric_and_its_failures():
    bw = CaseResult(
        "SumBandwidth.FractionOfCopyCeiling",
        "passed",
        properties={"fraction": "0.05", "gbps": "200", "ceiling_gbps": "4000"},
    )
    r = score(LAB, BinaryRun("b", "completed", cases=[CaseResult("Sum.a", "passed"), bw]))
    assert (r.points, r.unmeasured, r.measured_max) == (6, "", 10)
    row = gradebook_row(student(r))
    assert (row["max"], row["not_measured"]) == ("10", "")
    perf = {t["name"]: t for t in feedback.gradescope(student(r))["tests"]}["04_x performance"]
    assert (perf["max_score"], perf["status"]) == (4, "failed")


def test_labs_not_run_or_not_graded_are_words_not_zeros():
    def blank(lab_id, status, reason):
        return LabResult(lab_id, "t", status, reason, max_correctness=6, max_performance=4)

    ran = no_perf()
    skipped = blank("05_y", LabStatus.SKIPPED, "no GPU here")
    error = blank("06_z", LabStatus.ERROR, "the build failed for the machine's sake")
    failed = blank("07_w", LabStatus.BUILD_FAILED, "x.cu:1: error")
    res = student(ran, skipped, error, failed)
    row = gradebook_row(res, ["04_x", "05_y", "06_z", "07_w", "08_v"])
    assert [row[k] for k in ("04_x", "05_y", "06_z", "07_w", "08_v")] == [
        "6",
        "not run",
        "not graded",
        "0",  # the code's own failure is a grade
        "-",  # not in this result
    ]
    assert row["max"] == str(6 + 10)
    assert "05 not run" in row["not_measured"] and "06 not graded" in row["not_measured"]
    tests = {t["name"]: t for t in feedback.gradescope(res)["tests"]}
    for name in ("05_y correctness", "05_y performance", "06_z correctness"):
        assert tests[name]["max_score"] == 0 and "status" not in tests[name]
    assert tests["05_y correctness"]["output"] == "not run: no GPU here"
    assert tests["07_w correctness"]["status"] == "failed"
    assert "- points: none: not run here (no score, not a 0)" in feedback.markdown(res)


def test_a_lab_file_that_is_a_folder_is_named_so_not_missing(tmp_path):
    root = student_folder(tmp_path, "amy")
    lab = next(l for l in submissions.labmeta.load().labs if l.id.startswith("01"))
    target = root / "labs" / lab.id / lab.files[0]
    target.unlink()
    target.mkdir()
    sub = submissions.open_submission(str(root), student="amy")
    notes = submissions.install(
        sub, submissions.labmeta.load(), submissions.TEMPLATE_LABS, tmp_path / "dest"
    )
    said = [n for n in notes if lab.files[0] in n]
    assert said == [
        f"{lab.id}/{lab.files[0]} is a folder where a file belongs: graded as the skeleton"
    ]


def test_the_policy_check_of_a_students_own_tree_names_a_folder_as_such(tmp_path):
    from grader.engine.policy import policy

    lab = submissions.labmeta.load().lab("01")
    (tmp_path / lab.files[0]).mkdir()
    assert policy.check_strings(lab, tmp_path)[0].why == "a folder where a file belongs"


def test_grade_lab_under_no_perf_marks_performance_not_measured(monkeypatch):
    from grader.tests.test_shared_gpu import grade_07, run_with

    def checker(*a, **k):
        run = run_with()
        run.cases.append(CaseResult("SumBandwidth.FractionOfCopyCeiling", "skipped"))
        return run

    result = grade_07(monkeypatch, checker, None, perf=False)
    assert result.status == LabStatus.GRADED and result.unmeasured == "--no-perf"
    assert result.measured_max == result.max_correctness
