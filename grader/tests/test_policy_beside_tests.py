"""lab_grading.grade_lab: the linked policy check goes on beside a lab's
untimed tests, and its verdict still stands; where the tests are timed in
place it has ended before they start (nothing compiles beside a timing)."""

import threading
import time

from grader.engine import lab_grading
from grader.engine.policy import policy
from grader.status import LabStatus
from grader.tests.test_shared_gpu import grade_07, run_with

VIOLATION = policy.Violation("reduce.cu", 3, "cub::DeviceReduce::Sum", "a library reduction")


def grade(monkeypatch, perf: bool, timed_later):
    order: list[str] = []
    tests_began = threading.Event()

    def linked(lab, lab_dir, repo, work, *build):
        order.append("policy starts")
        tests_began.wait(0.5)  # long enough for tests started beside it to begin
        order.append("policy ends")
        return [VIOLATION]

    def fake_run_checker(checker, lab_id, spec, **kw):
        order.append("tests")
        tests_began.set()
        return run_with()

    monkeypatch.setattr(lab_grading, "linked_violations", linked)
    monkeypatch.setattr(lab_grading, "built_violations", lambda *a: [])
    result = grade_07(
        monkeypatch,
        fake_run_checker,
        None,
        perf=perf,
        linked_policy=True,
        timed_later=timed_later,
        gpu_count=1,
    )
    return result, order


def test_the_policy_check_goes_on_beside_untimed_tests_and_its_verdict_stands(monkeypatch):
    for perf, timed_later in ((True, []), (False, None)):
        result, order = grade(monkeypatch, perf, timed_later)
        assert order == ["policy starts", "tests", "policy ends"], (perf, order)
        assert result.status == LabStatus.POLICY and "cub::DeviceReduce::Sum" in result.reason
        assert result.points_correctness == result.points_performance == 0.0
        assert timed_later in (None, [])  # nothing of a refused lab is timed later


def test_tests_timed_in_place_start_after_the_policy_check(monkeypatch):
    result, order = grade(monkeypatch, perf=True, timed_later=None)
    assert order == ["policy starts", "policy ends", "tests"]
    assert result.status == LabStatus.POLICY


def test_a_check_that_reads_what_the_build_made_starts_after_the_build(monkeypatch):
    """Where the build's compile was the check's (a GPU lab's runner:
    build_flags.kept_by_build), the check reads the build's object: it must
    not start beside the build, as a compiling check does, and must end
    before the tests run the student's code, which could rewrite it."""
    from grader.tests import test_shared_gpu

    order: list[str] = []

    def slow_build(self):
        time.sleep(0.3)  # a check started beside the build would begin first
        order.append("built")

    def linked(*a):
        after = "built" in order
        time.sleep(0.2)  # a check beside the tests would end after they began
        order.append("policy " + ("after" if after else "before") + " the build")
        return []

    monkeypatch.setattr(test_shared_gpu.Built, "__init__", slow_build)
    monkeypatch.setattr(lab_grading, "reads_build", lambda *a: True)
    monkeypatch.setattr(lab_grading, "linked_violations", linked)
    monkeypatch.setattr(lab_grading, "built_violations", lambda *a: [])
    for perf, timed_later in ((True, []), (False, None), (True, None)):
        order.clear()
        result = grade_07(
            monkeypatch,
            lambda *a, **k: order.append("tests") or run_with(),
            None,
            perf=perf,
            linked_policy=True,
            timed_later=timed_later,
            gpu_count=1,
        )
        assert order[:2] == ["built", "policy after the build"], (perf, timed_later, order)
        assert order[2:] and set(order[2:]) == {"tests"}, order
        assert result.status == LabStatus.GRADED


def test_the_builds_object_is_read_before_the_students_code_runs(monkeypatch):
    """policy.check_built reads the build's own object: before the tests, even
    where the compiling check goes on beside them, and what it finds is kept."""
    order: list[str] = []
    found = policy.Violation("reduce.cu", 0, "std::system", "a process")

    def built(*a):
        order.append("object read")
        return [found]

    monkeypatch.setattr(lab_grading, "linked_violations", lambda *a: order.append("linked") or [])
    monkeypatch.setattr(lab_grading, "built_violations", built)
    result = grade_07(
        monkeypatch,
        lambda *a, **k: order.append("tests") or run_with(),
        None,
        perf=True,
        linked_policy=True,
        timed_later=[],
        gpu_count=1,
    )
    assert order.index("object read") < order.index("tests"), order
    assert result.status == LabStatus.POLICY and "std::system" in result.reason
