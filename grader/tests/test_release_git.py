"""A release is exactly the tracked student files of HEAD, built from git: no
untracked or ignored file, no uncommitted change, no instructor-only path."""

import shutil
import subprocess
from pathlib import Path

import pytest

from grader import cli
from grader.commands import release
from grader.infra import toolchain
from grader.infra.toolchain import REPO
from conftest import commit, git

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(not GIT, reason="no git on PATH")
MARKER = "UNCOMMITTED-MARKER-7f3a"

# What an instructor's working tree holds beside the tracked files.
STRAYS = (
    "runs/grades.csv",
    ".venv/x",
    "subprojects/packagecache/x",
    "subprojects/googletest-1.14/x",
    "googletest-1.14/x",
    "build/grade-report.json",
    "grade-report-2024/class.json",
    "grader/__pycache__/x.pyc",
    "labs/01_cpu_baseline/my_notes.txt",
    "solutions/01_cpu_baseline/extra.cpp",
    "class-grades/alice.json",
)


def release_files(dest: Path) -> set[str]:
    return {
        p.relative_to(dest).as_posix()
        for p in dest.rglob("*")
        if (p.is_file() or p.is_symlink()) and ".git" not in p.relative_to(dest).parts
    }


def committed(repo: Path) -> set[str]:
    return set(git(repo, "ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0")) - {""}


def dirty_the_tree(repo: Path) -> None:
    """Untracked and ignored files, a tracked file changed, a new file staged, a change staged."""
    for rel in STRAYS:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"{MARKER} {rel}\n")
    with open(repo / "README.md", "a") as f:
        f.write(f"\n{MARKER} in a tracked file\n")
    (repo / "staged_new.txt").write_text(MARKER)
    git(repo, "add", "-f", "staged_new.txt")
    lab = next(p for p in sorted((repo / "labs").rglob("*")) if p.is_file())
    lab.write_text(lab.read_text() + f"// {MARKER}\n")
    git(repo, "add", str(lab))


def assert_is_the_student_files_of_head(repo: Path, dest: Path) -> None:
    files = release_files(dest)
    expected = {p for p in committed(repo) if not release.left_out(p)}
    assert files == expected, (sorted(files - expected)[:10], sorted(expected - files)[:10])
    for rel in STRAYS + ("staged_new.txt",):
        assert not (dest / rel).exists(), rel
    for rel in files:
        assert MARKER.encode() not in (dest / rel).read_bytes(), rel
    assert release.stray(dest) == []  # LEFT_OUT, but the evidence released code reads
    # The release's own repository holds the same files, in one commit.
    assert committed(dest) == files
    assert git(dest, "status", "--porcelain", "--ignored") == ""
    assert git(dest, "rev-list", "--count", "HEAD").strip() == "1"


@pytest.fixture
def clone(tmp_path):
    if not GIT or not (REPO / ".git").exists():
        pytest.skip("this repository is not a git checkout (a copy without .git)")
    subprocess.run(
        ["git", "clone", "-q", "--no-hardlinks", str(REPO), str(tmp_path / "repo")],
        check=True,
        capture_output=True,
    )
    return tmp_path / "repo"


def test_release_of_a_clone_is_exactly_its_tracked_student_files(clone, tmp_path):
    dirty_the_tree(clone)
    dest = tmp_path / "release"
    commit = release.make(dest, repo=clone)
    assert commit == git(clone, "rev-parse", "HEAD").strip()
    assert_is_the_student_files_of_head(clone, dest)
    assert (dest / "labs" / "01_cpu_baseline").is_dir()
    assert (dest / "grader" / "labs.toml").read_text() == git(
        clone, "show", "HEAD:grader/labs.toml"
    )


def test_gitattributes_export_ignore_is_left_out(clone):
    """git archive alone, with this tree's .gitattributes committed, leaves out LEFT_OUT."""
    shutil.copy(REPO / ".gitattributes", clone / ".gitattributes")
    git(clone, "add", "-f", ".gitattributes")
    commit(clone, "attributes", "--allow-empty")  # empty where HEAD has it already
    names = subprocess.run(
        ["git", "-C", str(clone), "archive", "--format=tar", "HEAD"],
        check=True,
        capture_output=True,
    ).stdout
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(names)) as tar:
        archived = {m.name.rstrip("/") for m in tar.getmembers() if not m.isdir()}
    assert archived == {p for p in committed(clone) if not release.left_out(p)}
    for p in release.LEFT_OUT[:-1]:
        assert p in committed(clone) or any(c.startswith(p + "/") for c in committed(clone)), (
            f"LEFT_OUT names {p}, which HEAD does not have"
        )


@needs_git
def test_release_of_a_small_repository(tmp_path):
    """The same, on a made-up repository (runs where this one is a copy without .git)."""
    repo = tmp_path / "course"
    for rel, text in {
        "labs/01/reduce.cu": "skeleton\n",
        "README.md": "course\n",
        ".gitignore": "/build*/\n/.venv/\n/subprojects/packagecache/\n",
        "solutions/01/reduce.cu": "answer\n",
        "tests/mutants/m.cu": "m\n",
        "tests/sum_tests.cu": "t\n",
        "grader/tests/test_x.py": "x\n",
        "grader/labs.toml": "t = 1\n",
        ".ci/run": "ci\n",
        "tests/escapes/e.sh": "e\n",
        "tests/tuning/t.cu": "t\n",
        "tests/submissions/s/reduce.cu": "s\n",
    }.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "labs" / "01" / "run.sh").write_text("#!/bin/sh\n")
    (repo / "labs" / "01" / "run.sh").chmod(0o755)
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    commit(repo, "course")
    dirty_the_tree(repo)
    dest = tmp_path / "release"
    release.make(dest, repo=repo)
    assert_is_the_student_files_of_head(repo, dest)
    assert release_files(dest) == {
        ".gitignore",
        "README.md",
        "grader/labs.toml",
        "labs/01/reduce.cu",
        "labs/01/run.sh",
        "tests/sum_tests.cu",
    }
    assert (dest / "labs" / "01" / "run.sh").stat().st_mode & 0o111


@needs_git
def test_run_names_the_uncommitted_changes_it_left_out(tmp_path, capsys):
    repo = tmp_path / "course"
    (repo / "labs").mkdir(parents=True)
    (repo / "labs" / "a.cu").write_text("a\n")
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    commit(repo, "c")
    (repo / "labs" / "a.cu").write_text(MARKER)
    (repo / "runs").mkdir()
    (repo / "runs" / "grades.csv").write_text(MARKER)
    assert release.run(tmp_path / "release", do_check=False, repo=repo) == 0
    err = capsys.readouterr().err
    assert "uncommitted" in err and "labs/a.cu" in err and "runs" not in err
    assert (tmp_path / "release" / "labs" / "a.cu").read_text() == "a\n"
    assert release_files(tmp_path / "release") == {"labs/a.cu"}


def test_not_a_git_checkout_is_a_clear_error(tmp_path):
    plain = tmp_path / "copy"
    (plain / "labs").mkdir(parents=True)
    (plain / "labs" / "a.cu").write_text("a\n")
    dest = tmp_path / "release"
    with pytest.raises(toolchain.SetupError) as e:
        release.make(dest, repo=plain)
    msg = str(e.value)
    assert "not a git checkout" in msg and "\n" not in msg
    assert not dest.exists()


@needs_git
def test_a_folder_inside_a_checkout_is_not_one(tmp_path):
    repo = tmp_path / "outer"
    git(tmp_path, "init", "-q", str(repo))
    (repo / "inner").mkdir()
    with pytest.raises(toolchain.SetupError, match="not a git checkout"):
        release.make(tmp_path / "release", repo=repo / "inner")
    with pytest.raises(toolchain.SetupError, match="no commit at HEAD"):
        release.make(tmp_path / "release", repo=repo)


def test_cli_release_outside_a_checkout_exits_non_zero(tmp_path, monkeypatch, capsys):
    plain = tmp_path / "copy"
    plain.mkdir()
    monkeypatch.setattr(toolchain, "REPO", plain)
    assert cli.main(["release", str(tmp_path / "release"), "--no-check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "not a git checkout" in err and "\n" not in err
    assert not (tmp_path / "release").exists()
