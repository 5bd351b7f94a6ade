"""Points from test results, by the rubric."""
import json

from conftest import FIXTURES
from grader.gtest_run import BinaryRun, CaseResult, parse_gtest_json
from grader.labmeta import Lab
from grader.scoring import performance_points, score

LAB = Lab(id="04_x", title="x", kind="gpu_sum", files=("reduce.cu",), points_correctness=6,
          points_performance=4, threshold=0.2, floor=0.1)


def run_of(*cases):
    return BinaryRun(binary="b", status="completed", cases=list(cases))


def bw(status, fraction):
    return CaseResult("SumBandwidth.FractionOfCopyCeiling", status,
                      properties={"fraction": str(fraction), "gbps": "900", "ceiling_gbps": "4200"})


def test_performance_is_linear_between_floor_and_threshold():
    assert performance_points(LAB, 0.05) == 0
    assert performance_points(LAB, 0.1) == 0
    assert performance_points(LAB, 0.15) == 2
    assert performance_points(LAB, 0.2) == 4
    assert performance_points(LAB, 0.9) == 4
    assert performance_points(LAB, None) == 0


def test_all_correct_and_fast_is_full_marks():
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), bw("passed", 0.25)))
    assert (r.points_correctness, r.points_performance, r.points) == (6, 4, 10)


def test_one_wrong_case_costs_correctness_and_performance():
    wrong = CaseResult("Sum.b", "failed", properties={"fail_n": "257", "fail_hint": "read_past_end"})
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), wrong, bw("passed", 0.25)))
    assert r.points == 0
    assert r.first_failure.n == "257" and "bounds" in r.hints[0]


def test_slow_but_correct_keeps_correctness_points():
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), bw("failed", 0.12)))
    assert r.points_correctness == 6 and r.points_performance == 0.8


def test_skipped_binary_scores_nothing_and_says_why():
    r = score(LAB, BinaryRun(binary="b", status="skipped", reason="SKIP: no GPU"))
    assert r.status == "skipped" and r.points == 0 and "no GPU" in r.reason


def test_untouched_skeleton_scores_zero_with_not_implemented():
    program, cases = parse_gtest_json(json.loads((FIXTURES / "cpu_not_implemented.json").read_text()))
    r = score(LAB, BinaryRun(binary="b", status="completed", cases=cases, properties=program))
    assert r.points == 0 and r.first_failure.hint == "not_implemented" and r.seed == "7"


def test_cross_case_hint_for_sizes_above_2_to_31():
    big = CaseResult("SumZHuge.x", "failed", properties={"fail_n": str(2**32 + 7),
                                                         "fail_hint": "wrong_value"})
    r = score(LAB, run_of(CaseResult("Sum.a", "passed", properties={"n": "256"}), big))
    assert any("2^31" in h for h in r.hints)
