"""Feedback that says why a correct lab lost performance points."""

from grader.engine import feedback
from grader.results import LabResult


def lab(**kw):
    base = dict(
        lab="07_atomic_finish",
        title="One pass",
        status="graded",
        tests_passed=72,
        gbps=2100.0,
        ceiling_gbps=4230.0,
        fraction=0.5,
        threshold=0.715,
        floor=0.357,
        points_correctness=6,
        max_correctness=6,
        points_performance=1.6,
        max_performance=4,
        reference_fraction=0.944,
    )
    base.update(kw)
    return LabResult(**base)


def text(r):
    return "\n".join(feedback._lab_lines(r))


def test_a_slow_correct_lab_is_told_its_figure_the_reference_and_where_to_look():
    t = text(lab())
    assert "1.6 of 4 performance points" in t
    assert "0.500 of the ceiling against a threshold of 0.715 and a floor of 0.357" in t
    assert "the reference solution reached 0.944 on this GPU in this batch" in t
    assert "labs/07_atomic_finish/README.md" in t and "grader grade 07" in t


def test_below_the_floor_says_so():
    assert "no performance points: points start at the floor" in text(
        lab(fraction=0.2, points_performance=0.0)
    )


def test_full_points_or_an_incorrect_lab_get_no_such_lines():
    assert "what to look at" not in text(lab(fraction=0.9, points_performance=4.0))
    assert "what to look at" not in text(
        lab(tests_failed=3, points_correctness=0, points_performance=0.0)
    )


def test_without_a_reference_figure_the_line_still_reads():
    t = text(lab(reference_fraction=None))
    assert "reference" not in t and "threshold of 0.715" in t


def test_answers_reach_the_feedback_verbatim_and_unscored(tmp_path):
    from grader.engine import feedback
    from grader.results import StudentResult

    text = "Before: 0.75x\n```\nrm -rf /\n```\n<script>alert(1)</script>\n"
    res = StudentResult("ann", "subs/ann", "h", "c", "d", answers={"03_strided_index": text})
    md = feedback.markdown(res)
    assert "## Answers to the handouts' questions (not scored)" in md
    # the student's own ``` cannot close the block it is shown in
    assert "````text\n" + text.rstrip("\n") + "\n````" in md
    assert res.points == 0


def test_answers_are_read_safely_and_template_left_out(tmp_path):
    # (a link anywhere in a submission refuses all of it: scan_tree, tested elsewhere)
    from conftest import student_folder

    from grader import labmeta
    from grader.engine import submissions

    course = labmeta.load()
    root = student_folder(tmp_path, "bob")
    (root / "labs" / "03_strided_index" / "ANSWERS.md").write_text("my prediction: slower\n")
    big = root / "labs" / "04_sequential_addressing" / "ANSWERS.md"
    big.write_text("x" * (submissions.MAX_ANSWERS_BYTES + 1))
    sub = submissions.open_submission(str(root))
    answers, notes = sub.answers, sub.answer_notes
    assert answers == {"03_strided_index": "my prediction: slower\n"}
    assert any("04_sequential_addressing/ANSWERS.md is larger" in n for n in notes)
    # changed answers change the submission's hash (a resubmission is graded again)
    before = submissions.content_hash(sub, course)
    sub.answers = {}
    assert submissions.content_hash(sub, course) != before
