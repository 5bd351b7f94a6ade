"""A worker's tree holds the harness and nothing else: --out and a class's
submissions may live inside the checkout (the README's own example puts
--out there), and neither reaches a worker tree."""

import os
import subprocess
import sys

import pytest

from grader.engine import harness_tree
from grader.infra.toolchain import REPO


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _course(root):
    """A small checkout: harness files, a solution, slides, evidence, an ignored build."""
    files = {
        "meson.build": "project('x')\n",
        "labs/01/cpu_sum.cpp": "// skeleton\n",
        "common/a.hpp": "// harness\n",
        "tests/t.cpp": "// checker\n",
        "tests/gpu_runs/h200/run.json": "{}\n",
        "solutions/01/cpu_sum.cpp": "// answer\n",
        "slides/01.md": "# deck\n",
        ".gitignore": "/build*/\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "build").mkdir()
    (root / "build" / "huge.o").write_text("object\n")
    return root


def _listed(dest):
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())


@pytest.mark.parametrize("git", [True, False], ids=["git-checkout", "plain-folder"])
def test_out_and_submissions_inside_the_checkout_stay_out(tmp_path, git):
    repo = _course(tmp_path / "course")
    if git:
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
    # Untracked and not ignored, as a class's folders in a checkout are.
    out = repo / "tests" / "graded"
    (out / "students" / "ann").mkdir(parents=True)
    (out / "students" / "ann" / "result.json").write_text("{}\n")
    (repo / "tests" / "class" / "ann" / "labs").mkdir(parents=True)
    (repo / "tests" / "class" / "ann" / "labs" / "x.cpp").write_text("// a student\n")
    dest = out / "workers" / "w0" / "src"
    harness_tree.copy_harness(repo, dest, skip=(out, repo / "tests" / "class"))
    assert _listed(dest) == ["common/a.hpp", "labs/01/cpu_sum.cpp", "meson.build", "tests/t.cpp"]


def test_the_course_harness_has_labs_and_no_answers(tmp_path):
    dest = tmp_path / "src"
    harness_tree.copy_harness(REPO, dest)
    names = set(_listed(dest))
    assert "meson.build" in names and "labs/01_cpu_baseline/cpu_sum.cpp" in names
    assert "common/cuda_check.cuh" in names and "grader/labs.toml" in names
    for part in ("solutions/", "slides/", "tests/gpu_runs/", "build/", ".git/", ".venv/"):
        assert not any(n.startswith(part) for n in names), part


@pytest.mark.skipif(sys.platform != "linux", reason="the batch runs on Linux")
def test_the_readme_class_command_from_a_fresh_clone(tmp_path):
    """`python3 -m grader batch submissions/ann --out graded` from a clone's root,
    both folders inside the clone: ann's lab 01 is graded (it used to recurse)."""
    clone = tmp_path / "clone"
    done = subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"git clone of the checkout failed: {done.stderr.decode()[-200:]}")
    ann = clone / "submissions" / "ann" / "labs" / "01_cpu_baseline"
    ann.mkdir(parents=True)
    for f in (clone / "solutions" / "01_cpu_baseline").glob("*.cpp"):
        (ann / f.name).write_text(f.read_text())
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    args = ["batch", "submissions/ann", "--out", "graded", "--lab", "01", "--no-perf"]
    run = subprocess.run(
        [sys.executable, "-m", "grader", *args],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    shown = (run.stdout + run.stderr)[-3000:]
    assert run.returncode == 0, shown
    gradebook = (clone / "graded" / "gradebook.csv").read_text()
    assert "ann" in gradebook, gradebook
    result = (clone / "graded" / "students" / "ann" / "result.json").read_text()
    assert '"status": "graded"' in result, result
    tree = clone / "graded" / "workers" / "w0" / "src"
    assert not (tree / "graded").exists() and not (tree / "submissions").exists()
