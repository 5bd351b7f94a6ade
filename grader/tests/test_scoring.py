"""Points from test results, by the rubric."""

import json

from conftest import FIXTURES, gpu_lab

from grader.engine.gtest_run import parse_gtest_json
from grader.engine.scoring import performance_points, score
from grader.results import BinaryRun, CaseResult

LAB = gpu_lab()


def run_of(*cases):
    return BinaryRun(binary="b", status="completed", cases=list(cases))


def bw(status, fraction):
    return CaseResult(
        "SumBandwidth.FractionOfCopyCeiling",
        status,
        properties={"fraction": str(fraction), "gbps": "900", "ceiling_gbps": "4200"},
    )


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
    wrong = CaseResult(
        "Sum.b", "failed", properties={"fail_n": "257", "fail_hint": "read_past_end"}
    )
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), wrong, bw("passed", 0.25)))
    assert r.points == 0
    assert r.first_failure.n == "257" and "bounds" in r.hints[0]


def test_slow_but_correct_keeps_correctness_points():
    # The checker records the figure; the threshold is judged here, once.
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), bw("passed", 0.12)))
    assert r.points_correctness == 6 and r.points_performance == 0.8


def test_a_wrong_timed_call_is_a_wrong_answer():
    failed = CaseResult(
        "SumBandwidth.FractionOfCopyCeiling",
        "failed",
        properties={"fail_n": "134217728", "fail_hint": "stale_result"},
        failures=[
            "x\n  hint [stale_result]: a timed call returned the answer its input had before"
        ],
    )
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), failed))
    assert r.points == 0 and r.first_failure.hint == "stale_result"
    assert "before" in r.hints[0]


def test_the_slowest_graded_variant_counts_and_a_missing_figure_scores_zero():
    sum_bw = bw("passed", 0.25)
    max_bw = CaseResult(
        "MaxBandwidth.FractionOfCopyCeiling",
        "passed",
        properties={"fraction": "0.15", "gbps": "600", "ceiling_gbps": "4200"},
    )
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), sum_bw, max_bw))
    assert r.fraction == 0.15 and r.points_performance == 2
    silent = CaseResult("MaxBandwidth.FractionOfCopyCeiling", "passed", properties={})
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), sum_bw, silent))
    assert r.points_correctness == 6 and r.points_performance == 0


def test_ungraded_variants_are_recorded_not_scored():
    props = {
        "fraction": "0.25",
        "gbps": "1",
        "graded": "1",
        "naive_fraction": "0.01",
        "naive_graded": "0",
    }
    r = score(
        LAB,
        run_of(
            CaseResult("Sum.a", "passed"),
            CaseResult("KahanBandwidth.X", "passed", properties=props),
        ),
    )
    assert r.fraction == 0.25 and r.points_performance == 4


def test_an_implausible_figure_is_not_scored():
    props = {"fraction": "13.5", "gbps": "60000", "implausible": "1"}
    r = score(
        LAB,
        run_of(
            CaseResult("Sum.a", "passed"), CaseResult("SumBandwidth.X", "passed", properties=props)
        ),
    )
    assert r.points_correctness == 6 and r.points_performance == 0
    assert any("cannot come from reading the whole input" in n for n in r.notes)


def test_a_checker_failure_is_never_a_grade():
    r = score(LAB, BinaryRun(binary="b", status="checker_failed", reason="its CUDA context failed"))
    assert r.status == "error" and "context" in r.reason


def test_skipped_binary_scores_nothing_and_says_why():
    r = score(LAB, BinaryRun(binary="b", status="skipped", reason="SKIP: no GPU"))
    assert r.status == "skipped" and r.points == 0 and "no GPU" in r.reason


def test_untouched_skeleton_scores_zero_with_not_implemented():
    program, cases = parse_gtest_json(
        json.loads((FIXTURES / "cpu_not_implemented.json").read_text())
    )
    r = score(LAB, BinaryRun(binary="b", status="completed", cases=cases, properties=program))
    assert r.points == 0 and r.first_failure.hint == "not_implemented" and r.seed == "7"


def test_cross_case_hint_for_sizes_above_2_to_31():
    big = CaseResult(
        "SumZHuge.x", "failed", properties={"fail_n": str(2**32 + 7), "fail_hint": "wrong_value"}
    )
    r = score(LAB, run_of(CaseResult("Sum.a", "passed", properties={"n": "256"}), big))
    assert any("2^31" in h for h in r.hints)


def test_a_test_of_recorded_variants_only_does_not_cost_the_lab():
    recorded = CaseResult(
        "NaiveSumBandwidth.X", "passed", properties={"naive_fraction": "0.8", "naive_graded": "0"}
    )
    kahan = CaseResult(
        "KahanSumBandwidth.X", "passed", properties={"fraction": "0.25", "gbps": "1", "graded": "1"}
    )
    r = score(LAB, run_of(CaseResult("Sum.a", "passed"), recorded, kahan))
    assert r.fraction == 0.25 and r.points_performance == 4


def test_tests_not_run_after_the_crash_budget_are_counted_and_said():
    # The checker stops asking after max_crashes crashes or lost CUDA contexts
    # (tests/support/runner_link.hpp); the feedback says how many did not run.
    lost = CaseResult(
        "Sum.a", "failed", properties={"fail_n": "1", "fail_hint": "cuda_error"}, failures=["x"]
    )
    # As the checker reports them (a failure with hint not_run, the 2026-11-26
    # GPU run of gpu_fault_every_call), and as the grader marks a test that
    # left no result at all.
    refused = [
        CaseResult(f"Sum.n{k}", "failed", properties={"n": "3", "fail_hint": "not_run"})
        for k in range(2)
    ]
    no_result = CaseResult("Sum.last", "not_run", properties={"n": "5"})
    r = score(LAB, run_of(lost, *refused, no_result, bw("not_run", 0.0)))
    assert r.points == 0 and r.tests_failed == 5 and r.first_failure.hint == "cuda_error"
    assert any(h.startswith("3 test(s) did not run") for h in r.hints)


def test_the_first_failure_is_the_hang_not_a_test_refused_after_it():
    # The checker refuses the tests after a hang with hint not_run, and each
    # names its size: a refused smaller size must not hide the hang.
    hang = CaseResult(
        "Sum.big", "failed", properties={"fail_n": "1000000", "fail_hint": "timed_out"}
    )
    refused = CaseResult("Sum.small", "failed", properties={"fail_n": "1", "fail_hint": "not_run"})
    no_result = CaseResult("Sum.tiny", "not_run", properties={"n": "1"})
    for order in [(refused, no_result, hang), (hang, refused, no_result)]:
        r = score(LAB, run_of(*order))
        assert r.first_failure.hint == "timed_out" and r.first_failure.n == "1000000"


def test_tests_not_run_give_no_hint_about_sizes():
    # Two hangs at sizes that are not multiples of 32, then the checker
    # refuses the rest: the refused sizes are no evidence of a bounds bug.
    hangs = [
        CaseResult(f"Sum.h{n}", "failed", properties={"fail_n": str(n), "fail_hint": "timed_out"})
        for n in (33, 1000)
    ]
    refused = [
        CaseResult(f"Sum.r{n}", "failed", properties={"fail_n": str(n), "fail_hint": "not_run"})
        for n in (7, 65)
    ]
    passed = CaseResult("Sum.p", "passed", properties={"n": "256"})
    r = score(LAB, run_of(passed, *hangs, *refused))
    assert r.first_failure.hint == "timed_out"
    assert not any("multiple of the block size" in h for h in r.hints)
    assert any(h.startswith("2 test(s) did not run") for h in r.hints)


def test_a_reference_short_of_its_performance_points_is_said_and_why():
    from grader.engine.scoring import reference_short
    from grader.results import LabResult
    from grader.status import LabStatus

    r = LabResult(lab="01_cpu_baseline", title="CPU baseline", status=LabStatus.GRADED)
    r.max_performance, r.points_performance, r.fraction, r.threshold = 4, 4.0, 0.74, 0.49
    assert reference_short(r) is None  # every point: nothing to say
    r.points_performance, r.fraction = 0.0, 0.341
    why = reference_short(r)
    assert why and "0 of its 4 performance points" in why and "0.341" in why and "0.490" in why
    r.max_performance = 0  # a lab without performance points
    assert reference_short(r) is None
