"""A batch worker's copy of the instructor's harness: the files that build and
grade a lab, taken from what git lists, never a copy of the working directory."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

# What a worker's tree needs to build and grade: the build files, the harness
# and the skeletons. Never the whole working directory: a batch's --out or a
# class's submissions kept in the checkout would be copied into every worker
# tree (and --out into itself, without end).
HARNESS = ("meson.build", "meson.options", "common", "labs", "tests", "grader", "subprojects")
# Under those, what no worker builds or reads: build outputs, caches, the GPU
# evidence. Only matters where the tree is not a git checkout (git's own
# ignore rules apply otherwise).
_NOT_HARNESS = ("build", "build-*", "__pycache__", "*.pyc", ".venv", "gpu_runs", ".git")


def harness_files(repo: Path) -> list[str]:
    """The files of HARNESS in `repo`, relative to it: tracked or not ignored by
    git where `repo` is a checkout; else every file but _NOT_HARNESS's."""
    listed = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
            *HARNESS,
        ],
        capture_output=True,
    )
    if listed.returncode == 0 and listed.stdout:
        names = sorted({n for n in listed.stdout.decode().split("\0") if n})
        return [
            n
            for n in names
            if not any(fnmatch.fnmatch(part, pat) for part in Path(n).parts for pat in _NOT_HARNESS)
        ]
    found = []
    for top in HARNESS:
        base = repo / top
        if base.is_file():
            found.append(top)
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not _excluded(d)]
            rel = Path(dirpath).relative_to(repo)
            found += [str(rel / f) for f in filenames if not _excluded(f)]
    return sorted(found)


def _excluded(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pat) for pat in _NOT_HARNESS)


def copy_harness(repo: Path, dest: Path, skip: tuple[Path, ...] = ()) -> None:
    """The instructor's harness (HARNESS) copied into dest: no solutions, slides,
    build folders or evidence, and nothing under `skip` (the batch's --out and
    its submissions, wherever they are)."""
    repo, dest = Path(repo).resolve(), Path(dest)
    away = [p.resolve() for p in (*skip, dest)]
    for name in harness_files(repo):
        src = repo / name
        if not src.is_file() or any(src.resolve().is_relative_to(a) for a in away):
            continue  # deleted but still listed by git, or the batch's own output
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
