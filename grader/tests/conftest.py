import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True, scope="session")
def _lines_printed_as_the_command_line_prints_them():
    """The handler `grader` installs for its progress and traces (infra/log.py),
    so that a test that calls a function reads the lines the command prints."""
    from grader.infra import log

    log.install()


@pytest.fixture(autouse=True)
def _machine_taken_as_quiet(request, monkeypatch):
    """A batch's look at the machine's load before it starts (cpu_busy) would
    read the load these tests make and warn at random: here the machine is
    quiet, but where test_cpu_busy looks for itself."""
    if request.module.__name__.endswith("test_cpu_busy"):
        return
    from grader.infra import cpu_busy

    monkeypatch.setattr(cpu_busy, "busy_note", lambda seconds=0.5: None)


@pytest.fixture(autouse=True)
def _result_key_of_the_test(tmp_path_factory, monkeypatch):
    """The key that signs results (infra/store.py) is the test session's, never
    the user's own under ~/.local/state."""
    from grader.infra import store

    monkeypatch.setenv(store.KEY_ENV, str(tmp_path_factory.getbasetemp() / "result-key"))


def honest(root: Path, name: str) -> Path:
    """A submission that is the reference solutions: a student who did the work."""
    import shutil

    shutil.copytree(
        Path(__file__).resolve().parents[2] / "solutions",
        root / name / "labs",
        ignore=shutil.ignore_patterns("README.md"),
    )
    return root / name


# -- batch without meson or a GPU (test_batch*, test_pace, test_class_report) ----


def student_folder(tmp_path: Path, name: str, body: str | None = None) -> Path:
    """A submission holding labs/ copied from the skeletons, lab 01 optionally edited."""
    import shutil

    from grader.infra.toolchain import REPO

    root = tmp_path / "subs" / name
    shutil.copytree(REPO / "labs", root / "labs")
    if body is not None:
        p = root / "labs" / "01_cpu_baseline" / "cpu_sum.cpp"
        p.write_text(p.read_text().replace('  LAB_TODO_HOST("sum_sequential");\n', body))
    return root


def fake_grade_lab(calls: list):
    """grade_lab's stand-in: full correctness where lab 01 returns 42, else none."""
    from grader.results import LabResult

    def grade_lab(lab, build_dir, **kw):
        calls.append(lab.id)
        src = (kw["options"].repo / "labs" / lab.id / lab.files[0]).read_text()
        points = lab.points_correctness if "return 42;" in src else 0
        return LabResult(
            lab=lab.id,
            title=lab.title,
            status="graded",
            tests_passed=1,
            points_correctness=points,
            max_correctness=lab.points_correctness,
            max_performance=lab.points_performance,
        )

    return grade_lab


@pytest.fixture
def offline_batch(monkeypatch):
    """batch without meson or a GPU: the worker tree is copied, grading is faked;
    the list of labs graded, in order."""
    from grader.batch import worker as batch_worker
    from grader.engine import harness_tree, lab_grading
    from grader.infra.toolchain import REPO

    calls: list = []
    monkeypatch.setattr(lab_grading, "grade_lab", fake_grade_lab(calls))
    monkeypatch.setattr(
        batch_worker.Worker,
        "prepare",
        lambda self, course, labs, progress=None, seed=None: harness_tree.copy_harness(
            REPO, self.src
        ),
    )
    monkeypatch.setattr(
        batch_worker.Worker, "measure_ceilings", lambda self, labs, course, when, sides=(): None
    )
    monkeypatch.setattr(
        batch_worker.Worker,
        "preflight",
        lambda self, course, labs, progress=None, turns=None, beside=None: None,
    )
    return calls


def git(repo, *args: str) -> str:
    """git in `repo`, its output; a failure fails the test."""
    import subprocess

    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def commit(repo, message: str, *options: str) -> None:
    """A commit under a throwaway identity, whatever git config the machine has."""
    ident = [
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    git(repo, *ident, "commit", "-q", "--no-verify", "-m", message, *options)


def fake_bench(tmp_path: Path, name: str, body: str) -> Path:
    """A bench program `name` that writes `body` as its report to --json=FILE and
    prints a line, as the real ones do."""
    import stat

    exe = tmp_path / name
    exe.write_text(
        '#!/bin/sh\nfor a in "$@"; do case $a in --json=*) '
        f"printf '%s' '{body}' > \"${{a#--json=}}\";; esac; done\necho measured\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def gpu_lab():
    """A GPU lab of 6 correctness and 4 performance points, threshold 0.2, floor 0.1."""
    from grader.labmeta import Lab

    return Lab(
        id="04_x",
        title="x",
        kind="gpu_sum",
        files=("reduce.cu",),
        points_correctness=6,
        points_performance=4,
        threshold=0.2,
        floor=0.1,
    )
