"""A policy check that cannot judge is the student's fault only when the
student's file is what failed. The instructor's files that it compares with
(the skeleton and the reference) failing to compile is the machine's or the
grader's: the lab is not graded (ERROR, graded again by the batch's next run),
never refused: the student cannot mend the instructor's files, and a busy
machine can fail them (docs/decisions.md, "A policy check that cannot judge
the instructor's files is not the student's fault"). The reason keeps the
compilers' output. And every unjudged check is run once more
before anything is said: a busy machine's failure must not count at all."""

from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.policy import build_flags
from grader.engine import lab_grading
from grader.engine.policy import lab_policy, policy
from grader.infra.toolchain import REPO
from grader.status import LabStatus
from grader.tests.test_policy_symbols import needs_gxx
from grader.tests.test_shared_gpu import grade_07, run_with

COURSE = labmeta.load()


def each_file(monkeypatch, tmp_path: Path, *answers: policy.LinkedCheck):
    """linked_violations of lab 01, its check answering `answers` in turn;
    returns the violations and how many times the check ran."""
    calls: list[int] = []

    def check(*a, **k):
        calls.append(1)
        return answers[min(len(calls), len(answers)) - 1]

    monkeypatch.setattr(policy, "check_linked", check)
    like = build_flags.BuildCompile(["g++"], tmp_path, "cpu_reduce.cpp")
    monkeypatch.setattr(build_flags, "for_file", lambda *a: like)
    lab = COURSE.lab("01")
    found = lab_policy.linked_violations(
        lab, REPO / "solutions" / lab.id, REPO, tmp_path / "work", tmp_path, "t"
    )
    return found, len(calls)


JUDGED = policy.LinkedCheck([], True, "", 0.0, True)
FAILED = policy.LinkedCheck([], False, "cc1plus: killed", 0.0, False)
FAULT = policy.LinkedCheck([], True, "neither ... could be compiled\nnvcc: killed", 0.0, False, "x")


def test_a_check_that_could_not_judge_runs_once_more_and_its_second_verdict_counts(
    monkeypatch, tmp_path
):
    found, calls = each_file(monkeypatch, tmp_path, FAILED, JUDGED)
    assert (found, calls) == ([], 2)


def test_a_student_file_that_twice_could_not_be_checked_is_refused(monkeypatch, tmp_path):
    found, calls = each_file(monkeypatch, tmp_path, FAILED, FAILED)
    assert calls == 2 and len(found) == 1 and not found[0].fault
    assert "cc1plus: killed" in found[0].why


def test_instructors_files_that_twice_did_not_compile_are_a_fault_not_a_refusal(
    monkeypatch, tmp_path
):
    found, calls = each_file(monkeypatch, tmp_path, FAULT, FAULT)
    assert calls == 2 and len(found) == 1 and found[0].fault
    assert found[0].why.startswith(lab_policy.NOT_GRADED)
    result = lab_grading.blank_result(COURSE.lab("01"), LabStatus.GRADED, "")
    result.points_correctness = 6.0
    lab_policy.refuse(result, [policy.Violation("x.cpp", 3, "std::reduce", "a library"), *found])
    assert result.status == LabStatus.ERROR and result.points_correctness == 0.0
    assert "std::reduce" not in result.reason  # what a fault leaves unjudged is not reported
    lab_policy.refuse(result, [policy.Violation("x.cpp", 3, "std::reduce", "a library")])
    assert result.status == LabStatus.POLICY and "std::reduce" in result.reason


def test_a_build_folder_without_the_files_compile_is_a_fault(monkeypatch, tmp_path):
    """compile_commands.json is the grader's (it configures the tree): a
    compile missing from it is not the student's doing."""
    monkeypatch.setattr(build_flags, "for_file", lambda *a: None)
    lab = COURSE.lab("01")
    found = lab_policy.linked_violations(
        lab, REPO / "solutions" / lab.id, REPO, tmp_path / "work", tmp_path, "t"
    )
    assert len(found) == 1 and found[0].fault and "compile_commands.json" in found[0].why


@needs_gxx
def test_the_real_check_names_a_baseline_it_could_not_compile_as_a_fault(tmp_path):
    """check_linked's own verdict: a skeleton that does not compile (here: a
    missing one) and no reference leave no usable facts, which is a fault,
    with the reason the skeleton gave."""
    lab = COURSE.lab("01")
    name = lab.files[0]
    student = tmp_path / name
    student.write_text((REPO / "solutions" / lab.id / name).read_text())
    checked = policy.check_linked(
        lab,
        student,
        skeleton_file=tmp_path / "missing" / name,
        reference_file=None,
        include_dirs=[REPO / "common"],
        work=tmp_path / "work",
    )
    assert checked.compiled and not checked.judged
    assert "the file is missing" in checked.fault, checked.fault


@pytest.mark.parametrize("where", ["linked", "built"])
def test_grade_lab_leaves_a_lab_ungraded_when_its_check_had_a_fault(monkeypatch, where):
    fault = policy.Violation("reduce.cu", 0, "", lab_policy.NOT_GRADED + "nvcc: killed", True)
    monkeypatch.setattr(lab_grading, "linked_violations", lambda *a: [fault] * (where == "linked"))
    monkeypatch.setattr(lab_grading, "built_violations", lambda *a: [fault] * (where == "built"))
    result = grade_07(
        monkeypatch,
        lambda *a, **k: run_with(),
        None,
        perf=True,
        linked_policy=True,
        timed_later=[],
        gpu_count=1,
    )
    assert result.status == LabStatus.ERROR, (result.status, result.reason)
    assert result.points_correctness == result.points_performance == 0.0
    assert "nvcc: killed" in result.reason
