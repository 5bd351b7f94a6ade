"""Fenced regions: extraction, what lies outside them, transplanting."""
import pytest

from conftest import FIXTURES  # noqa: F401
from grader import fences
from grader.tools import REPO

HARNESS = """int f() {
  // ---- your code here (f) ----
  // TODO
  LAB_TODO_HOST("f");
  // ---- end ----
}
"""
STUDENT = HARNESS.replace('  // TODO\n  LAB_TODO_HOST("f");\n', "  return 42;\n")


def test_extract_names_and_bodies():
    (f,) = fences.extract(STUDENT)
    assert f.name == "f" and f.body == "  return 42;\n" and f.first_line == 3


def test_outside_ignores_the_fence_bodies():
    assert fences.outside(HARNESS) == fences.outside(STUDENT)


def test_transplant_puts_the_student_code_into_the_harness():
    tampered = STUDENT.replace("int f()", "int f() /* changed */")
    assert fences.transplant(tampered, HARNESS) == STUDENT


def test_unclosed_fence_is_an_error():
    with pytest.raises(fences.FenceError):
        fences.extract("// ---- your code here (x) ----\nint a;\n")


def test_skeleton_and_solution_differ_only_inside_fences():
    if not (REPO / "solutions").is_dir():
        pytest.skip("no solutions/ here (a student release)")
    for lab_dir in sorted((REPO / "labs").iterdir()):
        for path in lab_dir.glob("*.c*"):
            solution = REPO / "solutions" / lab_dir.name / path.name
            assert solution.exists(), f"{solution} is missing"
            skeleton_fences = [f.name for f in fences.extract(path.read_text())]
            assert skeleton_fences, f"{path} has no fenced region"
            assert skeleton_fences == [f.name for f in fences.extract(solution.read_text())]
            assert fences.outside(path.read_text()) == fences.outside(solution.read_text()), (
                f"{path} and its solution differ outside the fences")
