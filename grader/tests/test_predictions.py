"""Predictions in ANSWERS.md (grader/engine/predictions.py), printed beside what
`grade` and `profile` measure, in the report and in a batch's feedback."""

from __future__ import annotations

import pytest

from grader import labmeta
from grader.commands import grade, profile
from grader.engine.profile_ncu import Profile
from grader.engine import feedback, predictions
from grader.results import FailedCase, LabResult, StudentResult
from grader.status import CaseStatus, LabStatus, ProfileStatus

SKELETON = """# Lab 04
Prediction (fraction_of_copy):
Prediction (gbps): \n"""


def test_an_empty_skeleton_predicts_nothing():
    p = predictions.parse(SKELETON)
    assert p.values == {} and p.notes == []


@pytest.mark.parametrize(
    "value, expected",
    [("0.25", 0.25), ("1,200 GB/s", 1200.0), ("~40%", 40.0), ("about 0.2x", 0.2), ("**880**", 880)],
)
def test_a_filled_prediction_is_read(value, expected):
    p = predictions.parse(f"text\nPrediction (gbps): {value}\nmore\n")
    assert p.values == {"gbps": expected} and not p.notes


def test_a_malformed_value_or_an_unknown_key_is_ignored_with_a_note():
    p = predictions.parse(
        "Prediction (gbps): faster than lab 03\n"
        "Prediction (speed): 3\n"
        "Prediction (bank_conflicts): 0\n",
        "labs/04/ANSWERS.md",
    )
    assert p.values == {"bank_conflicts": 0.0}
    assert len(p.notes) == 2
    assert (
        "labs/04/ANSWERS.md: Prediction (gbps): 'faster than lab 03' is not a number"
        in (p.notes[0])
    )
    assert "Prediction (speed) is no key" in p.notes[1]


def test_only_whole_lines_of_the_form_count():
    p = predictions.parse("My Prediction (gbps): 5 is here\n  Prediction (gbps): 7\n")
    assert p.values == {"gbps": 7.0}


def test_read_without_answers_is_empty(tmp_path):
    assert predictions.read(tmp_path).values == {}


def lab(gbps: float | None = 880.0, fraction: float | None = 0.204) -> LabResult:
    return LabResult(
        "04_sequential_addressing",
        "Lab 04",
        LabStatus.GRADED,
        tests_passed=72,
        gbps=gbps,
        ceiling_gbps=4300.0,
        fraction=fraction,
        threshold=0.156,
        floor=0.1,
        max_correctness=5,
        max_performance=5,
        points_correctness=5,
        points_performance=5,
    )


FILLED = "Prediction (fraction_of_copy): 0.3\nPrediction (gbps): 1000\n"


def test_grade_prints_the_prediction_beside_the_measured_bandwidth():
    report = grade.GradeReport("c", "d", "labs", [lab()])
    report.predicted["04_sequential_addressing"] = predictions.parse(FILLED)
    row = grade.table(report).splitlines()[2]
    assert row.startswith("04_sequential_addressing")
    assert "you predicted 0.3 of the copy, measured 0.204" in row
    assert "you predicted 1,000 GB/s, measured 880" in row


def test_grade_says_nothing_of_a_prediction_when_nothing_was_measured():
    report = grade.GradeReport("c", "d", "labs", [lab(gbps=None, fraction=None)])
    report.predicted["04_sequential_addressing"] = predictions.parse(FILLED)
    assert "predicted" not in grade.table(report)


def test_grade_reads_the_students_notes(tmp_path):
    (tmp_path / "ANSWERS.md").write_text("Prediction (gbps): lots\n")
    (tmp_path / ".hints-taken").write_text("2\n")
    report = grade.GradeReport("c", "d", "labs", [lab()])
    grade.read_students_notes(report, "04_sequential_addressing", tmp_path)
    text = grade.details(report)
    assert "04_sequential_addressing: hints taken: 2" in text
    assert "'lots' is not a number" in text
    assert report.to_dict()["hints_taken"] == {"04_sequential_addressing": 2}


def test_feedback_shows_predictions_and_hints_taken():
    res = StudentResult("alice", "x", "h", "c", "d", labs=[lab()])
    res.answers = {"04_sequential_addressing": FILLED}
    res.hints_taken = {"04_sequential_addressing": 3}
    text = feedback.markdown(res)
    assert "  - you predicted 0.3 of the copy, measured 0.204" in text
    assert "- hints taken: 3" in text
    other = StudentResult("bob", "x", "h", "c", "d", labs=[lab()])
    assert "hints taken" not in feedback.markdown(other)
    assert "predicted" not in feedback.markdown(other)


def test_profile_prints_the_prediction_beside_its_counter():
    course = labmeta.load()
    mine = Profile("04_sequential_addressing", "yours", ProfileStatus.OK)
    mine.metrics = {"bank_conflicts": 0.0, "time_us": 100.0}
    said = predictions.parse("Prediction (bank_conflicts): 12\n")
    text = profile.table(course, "04_sequential_addressing", {"yours": mine}, None, said)
    (row,) = [line for line in text.splitlines() if "shared-memory bank conflicts" in line]
    assert row.rstrip().endswith("you predicted 12")
    assert "you predicted" not in text.replace(row, "")


def test_a_failed_lab_with_hints_points_to_them():
    failed = lab()
    failed.first_failure = FailedCase("SumContract.Small", CaseStatus.FAILED, hint="wrong_value")
    report = grade.GradeReport("c", "d", "labs", [failed])
    assert "grader hint" not in grade.details(report)
    report.has_hints.add(failed.lab)
    assert "    stuck: python3 -m grader hint 04 (one hint at a time)" in grade.details(report)
