"""Turning a student's submission into files the instructor's harness can build.

A submission is a folder, an archive (.zip, .tar, .tar.gz, .tgz) or a git
repository (a URL, or a path holding .git) that contains labs/ (or is labs/).
Only the fenced regions of the lab files are taken from it: everything
outside them, and every other file, comes from the instructor's copy, and
each difference found outside the fences becomes a note in the feedback.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from . import fences
from .labmeta import Course

ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz")


@dataclass
class Submission:
    student: str
    origin: str
    labs_dir: Path                      # the submission's labs/ folder
    notes: list[str] = field(default_factory=list)
    workdir: tempfile.TemporaryDirectory | None = None


def student_name(spec: str) -> str:
    name = spec.rstrip("/").split("/")[-1]
    for suffix in (".git",) + ARCHIVES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "student"


def _find_labs(root: Path) -> Path | None:
    if (root / "labs").is_dir():
        return root / "labs"
    if any(p.name[:2].isdigit() for p in root.iterdir() if p.is_dir()):
        return root  # the submission is the labs/ folder itself
    subdirs = [p for p in root.iterdir() if p.is_dir()]
    if len(subdirs) == 1:  # an archive with one top folder
        return _find_labs(subdirs[0])
    return None


def _safe_extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")  # no absolute paths, no links out


def open_submission(spec: str) -> Submission:
    """Materialises a submission; raises ValueError with a clear message if it cannot."""
    student = student_name(spec)
    path = Path(spec)
    tmp = None
    if spec.startswith(("http://", "https://", "git@", "ssh://")) or spec.endswith(".git") \
            or (path.is_dir() and (path / ".git").exists() and not (path / "labs").is_dir()):
        tmp = tempfile.TemporaryDirectory(prefix="submission-")
        proc = subprocess.run(["git", "clone", "--quiet", "--depth", "1", spec, tmp.name + "/repo"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise ValueError(f"{spec}: git clone failed: {proc.stderr.strip()[-300:]}")
        root = Path(tmp.name, "repo")
    elif path.is_file() and spec.endswith(ARCHIVES):
        tmp = tempfile.TemporaryDirectory(prefix="submission-")
        root = Path(tmp.name)
        try:
            if spec.endswith(".zip"):
                with zipfile.ZipFile(path) as z:
                    for member in z.namelist():
                        if member.startswith("/") or ".." in Path(member).parts:
                            raise ValueError(f"{spec}: unsafe path in archive: {member}")
                    z.extractall(root)
            else:
                _safe_extract_tar(path, root)
        except (zipfile.BadZipFile, tarfile.TarError) as e:
            raise ValueError(f"{spec}: cannot read the archive: {e}") from None
    elif path.is_dir():
        root = path
    else:
        raise ValueError(f"{spec}: not a folder, an archive ({', '.join(ARCHIVES)}) or a git "
                         "repository")
    labs = _find_labs(root)
    if labs is None:
        raise ValueError(f"{spec}: no labs/ folder in the submission")
    return Submission(student, spec, labs, workdir=tmp)


def content_hash(sub: Submission, course: Course) -> str:
    """Hash of the student's lab files: a changed resubmission is graded again."""
    h = hashlib.sha256()
    for lab in course.labs:
        for name in lab.files:
            p = sub.labs_dir / lab.id / name
            h.update(f"{lab.id}/{name}\0".encode())
            h.update(p.read_bytes() if p.exists() else b"<missing>")
    return h.hexdigest()[:16]


def install(sub: Submission, course: Course, harness_labs: Path, dest_labs: Path) -> list[str]:
    """Writes the student's fences into the instructor's lab files under dest_labs.

    Returns notes for the feedback: files missing, code changed outside the
    fences (restored), fence markers broken (the skeleton's TODO kept)."""
    notes = []
    for lab in course.labs:
        for name in lab.files:
            harness = (harness_labs / lab.id / name).read_text()
            theirs_path = sub.labs_dir / lab.id / name
            out = dest_labs / lab.id / name
            out.parent.mkdir(parents=True, exist_ok=True)
            if not theirs_path.exists():
                notes.append(f"{lab.id}/{name} is missing from the submission: graded as the skeleton")
                text = harness
            else:
                theirs = theirs_path.read_text(errors="replace")
                try:
                    text = fences.transplant(theirs, harness, f"{lab.id}/{name}")
                    missing = {f.name for f in fences.extract(harness)} - \
                              {f.name for f in fences.extract(theirs)}
                    if missing:
                        notes.append(f"{lab.id}/{name}: fence(s) {', '.join(sorted(missing))} "
                                     "not found; the skeleton's TODO was kept there")
                    if fences.outside(theirs) != fences.outside(harness):
                        notes.append(f"{lab.id}/{name}: changes outside the fenced regions were "
                                     "replaced by the instructor's harness")
                except fences.FenceError as e:
                    notes.append(f"{lab.id}/{name}: {e}; graded as the skeleton")
                    text = harness
            # Fresh content and a fresh mtime: ninja rebuilds exactly what changed.
            if not out.exists() or out.read_text() != text:
                out.write_text(text)
    for extra in ("tests", "common", "grader"):
        if (sub.labs_dir.parent / extra).is_dir() and sub.labs_dir.name == "labs":
            notes.append(f"the submission's {extra}/ was ignored: grading uses the instructor's")
    return notes


def copy_harness(repo: Path, dest: Path) -> None:
    """The instructor's tree without solutions, build folders, slides or git."""
    ignore = shutil.ignore_patterns(".git", "build", "build-*", "solutions", "slides", "__pycache__",
                                    "gpu_runs", ".venv", "*.pyc")
    shutil.copytree(repo, dest, ignore=ignore, dirs_exist_ok=True)
