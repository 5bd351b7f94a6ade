"""`release DEST`: the repository students receive.

A release is exactly the tracked student files of the commit at HEAD: it is
built with `git archive HEAD`, never from the working tree. So nothing
untracked or ignored can reach it (.venv/, build folders, meson's
subprojects/packagecache and googletest-*/, grade reports, an instructor's
runs/ or a class's grades), and neither can uncommitted changes to tracked
files: commit them first (e.g. the thresholds `calibrate --write` puts in
grader/labs.toml); `run` names the tracked files that differ from HEAD.
Where the repository is not a git checkout there is no release (a clear
error, no copying of the working tree as a fallback).

Left out of the commit's files: the reference solutions and the hidden tests
(mutants, the tuning sweeps, the class of buggy submissions, the sandbox
escapes, the similarity fixtures with their honest solutions, the grader's
own tests, CI), the instructors' guides (docs/) and the GPU evidence but for
the files released code reads (KEPT_EVIDENCE): LEFT_OUT, marked
`export-ignore` in .gitattributes and also dropped here by name, so the rule
holds for a commit whose .gitattributes lacks them. The release's README.md
is the students' guide, docs/student/README.md (STUDENT_README), written
with links relative to the release root; the course's README.md, written for
instructors, stays out. The course GPU's thresholds are those of
grader/labs.toml at HEAD. Then grading is checked in the copy itself: lab 01
(CPU) is graded and must fail with "not implemented"."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath

from ..infra import toolchain
from ..status import LabStatus

# Paths (relative to the repository root) that never reach a release; ".git"
# stays last (the release gets a .git of its own).
LEFT_OUT = (
    "solutions",
    "tests/mutants",
    "tests/tuning",
    "tests/submissions",
    "tests/escapes",
    "tests/similarity",
    "tests/format",
    "grader/tests",
    "docs",
    "tests/gpu_runs",
    ".ci",
    ".gitattributes",
    ".git",
)
# The evidence released code reads: the reference columns of `grader profile`
# (grader/commands/profile.py), the decks' tables (slides/deckgen/view.py) and
# lab 12's deck (slides/deckgen/multi_gpu.py).
KEPT_EVIDENCE = (
    "tests/gpu_runs/h200/profile.json",
    "tests/gpu_runs/h200/gpucheck.json",
    "tests/gpu_runs/h100x2/lab12-bench-87b7298.json",
)
STUDENT_README = "docs/student/README.md"

_NOT_GIT = (
    "{repo} is not a git checkout ({why}): a release is built from the committed "
    "files (git archive HEAD), never from the working tree; run release in a clone "
    "of the course repository"
)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True)


def _first_line(b: bytes) -> str:
    lines = b.decode(errors="replace").strip().splitlines()
    return lines[0].strip() if lines else "no message"


def head(repo: Path) -> str:
    """The commit a release of `repo` is built from; SetupError where there is none."""
    if not shutil.which("git"):
        raise toolchain.SetupError(_NOT_GIT.format(repo=repo, why="no git on PATH"))
    top = _git(repo, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise toolchain.SetupError(_NOT_GIT.format(repo=repo, why=_first_line(top.stderr)))
    if Path(top.stdout.decode().strip()).resolve() != Path(repo).resolve():
        raise toolchain.SetupError(
            _NOT_GIT.format(
                repo=repo, why=f"it is a folder inside the checkout {top.stdout.decode().strip()}"
            )
        )
    sha = _git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    if sha.returncode != 0:
        raise toolchain.SetupError(_NOT_GIT.format(repo=repo, why="no commit at HEAD"))
    return sha.stdout.decode().strip()


def left_out(path: str) -> bool:
    """Whether a path relative to the repository root is kept out of a release."""
    if path in KEPT_EVIDENCE:
        return False
    return any(path == p or path.startswith(p + "/") for p in LEFT_OUT)


def _student_readme(repo: Path, commit: str, dest: Path, tracked: set[str]) -> None:
    """The release's README.md: the students' guide where the commit has one."""
    if STUDENT_README not in tracked:
        return
    shown = _git(repo, "show", f"{commit}:{STUDENT_README}")
    if shown.returncode != 0:
        raise toolchain.SetupError(
            f"git show {commit}:{STUDENT_README} failed: {_first_line(shown.stderr)}"
        )
    (dest / "README.md").write_bytes(shown.stdout)
    os.chmod(dest / "README.md", 0o644)


def stray(dest: Path) -> list[str]:
    """What a release holds of LEFT_OUT (KEPT_EVIDENCE aside): nothing, when right."""
    found = []
    for p in LEFT_OUT[:-1]:
        here = dest / p
        if here.is_file() or here.is_symlink():
            found.append(p)
        elif here.is_dir():
            found += [
                rel
                for f in sorted(here.rglob("*"))
                if not f.is_dir() and left_out(rel := f.relative_to(dest).as_posix())
            ]
    return found


def _committed_files(repo: Path, commit: str) -> set[str]:
    out = _git(repo, "ls-tree", "-r", "-z", "--name-only", "--full-tree", commit)
    if out.returncode != 0:
        raise toolchain.SetupError(f"git ls-tree {commit} failed: {_first_line(out.stderr)}")
    return {p for p in out.stdout.decode().split("\0") if p}


def modified(repo: Path) -> list[str]:
    """Tracked files whose working-tree or staged content differs from HEAD: not released."""
    out = _git(repo, "status", "--porcelain", "-z", "--untracked-files=no")
    entries = iter(out.stdout.decode(errors="replace").split("\0"))
    changed = []
    for e in entries:
        if len(e) > 3:
            changed.append(e[3:])
            if e[0] in "RC":
                next(entries, None)  # a rename's or copy's source path
    return changed


def _extract(archive: bytes, dest: Path, tracked: set[str]) -> list[str]:
    """Writes the archive's files into dest but LEFT_OUT; returns the files written."""
    written = []
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        for m in tar.getmembers():
            name = m.name.rstrip("/")
            parts = PurePosixPath(name).parts
            if not name or name.startswith("/") or ".." in parts:
                raise toolchain.SetupError(f"git archive gave an unsafe path {m.name!r}")
            if left_out(name):
                continue
            target = dest.joinpath(*parts)
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            if name not in tracked:
                raise toolchain.SetupError(f"git archive gave {name}, which is no file of HEAD")
            target.parent.mkdir(parents=True, exist_ok=True)
            if m.isreg():
                contents = tar.extractfile(m)
                assert contents is not None  # None only for what is not a file (isreg above)
                target.write_bytes(contents.read())
                os.chmod(target, 0o755 if m.mode & 0o111 else 0o644)
            elif m.issym():
                inside = (target.parent / m.linkname).resolve()
                if os.path.isabs(m.linkname) or not inside.is_relative_to(dest.resolve()):
                    raise toolchain.SetupError(f"{name} links outside the release ({m.linkname})")
                os.symlink(m.linkname, target)
            else:
                raise toolchain.SetupError(f"git archive gave {name} of an unexpected type")
            written.append(name)
    return written


def make(dest: Path, repo: Path | None = None) -> str:
    """Writes the release of `repo` (default: this repository) at HEAD into `dest`, an
    empty or new folder, as a one-commit git repository; returns the commit released."""
    repo = Path(repo if repo is not None else toolchain.REPO).resolve()
    commit = head(repo)
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise toolchain.SetupError(f"{dest} exists and is not empty")
    archive = _git(repo, "archive", "--format=tar", commit)
    if archive.returncode != 0:
        raise toolchain.SetupError(f"git archive {commit} failed: {_first_line(archive.stderr)}")
    dest.mkdir(parents=True, exist_ok=True)
    tracked = _committed_files(repo, commit)
    _extract(archive.stdout, dest, tracked)
    _student_readme(repo, commit, dest, tracked)
    ident = [
        "-c",
        "user.name=course",
        "-c",
        "user.email=course@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    for args in (
        ["init", "-q"],
        ["add", "-A", "-f"],
        [*ident, "commit", "-q", "--no-verify", "-m", f"Student release of {commit}"],
    ):
        done = _git(dest, *args)
        if done.returncode != 0:
            raise toolchain.SetupError(
                f"git {args[-1] if args[0] == '-c' else args[0]} in {dest} "
                f"failed: {_first_line(done.stderr)}"
            )
    return commit


def check(dest: Path) -> tuple[bool, str]:
    """Grades lab 01 in the release: it must build, run, and say 'not implemented'."""
    report = dest / "build" / "grade-report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "01", "--no-perf"],
        cwd=dest,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if not report.exists():
        return False, f"no report; grade printed:\n{(proc.stdout + proc.stderr)[-3000:]}"
    lab = json.loads(report.read_text())["labs"][0]
    ok = (
        proc.returncode == 1
        and lab["status"] == LabStatus.GRADED
        and lab["tests_failed"] > 0
        and (lab.get("first_failure") or {}).get("hint") == "not_implemented"
    )
    return (
        ok,
        f"lab 01 in the release: {lab['tests_passed']} passed, {lab['tests_failed']} "
        f"failed, first failure hint {(lab.get('first_failure') or {}).get('hint')}",
    )


def run(dest: Path, do_check: bool, repo: Path | None = None) -> int:
    repo = Path(repo if repo is not None else toolchain.REPO).resolve()
    commit = make(dest, repo)
    left = stray(dest)
    if left:
        print(f"release: {', '.join(left[:8])} should not be there")
        return 1
    print(
        f"release: wrote {dest} from commit {commit[:12]} (left out: "
        f"{', '.join(LEFT_OUT[:-1])}; kept of tests/gpu_runs: {', '.join(KEPT_EVIDENCE)})"
    )
    changed = modified(repo)
    if changed:
        shown = ", ".join(changed[:8]) + (
            f" and {len(changed) - 8} more" if len(changed) > 8 else ""
        )
        print(
            f"release: not in it, uncommitted changes to {len(changed)} tracked file(s) "
            f"(commit them and release again to ship them): {shown}",
            file=sys.stderr,
        )
    if not do_check:
        return 0
    ok, message = check(dest)
    print(("release check OK: " if ok else "release check FAILED: ") + message)
    return 0 if ok else 1
