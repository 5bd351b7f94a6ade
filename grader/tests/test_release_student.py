"""What a student receives: the release's README is the students' guide, the
instructors' guides and the GPU evidence stay out but for the files released
code reads, every link resolves inside the release, and no student text
points at what the release lacks (grader/commands/release.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from grader.commands import profile, release
from grader.engine.policy import fence_statements
from grader.infra.toolchain import REPO
from conftest import commit, git

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(not GIT, reason="no git on PATH")

# What no student text may name: the instructor's side of the course.
FORBIDDEN = re.compile(r"course notes|\bsolutions/|tests/submissions|grader/tests", re.I)
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s*\[[^\]\n]+\]:\s*(\S+)", re.M)
# A backticked span that looks like a path of the repository: a first part the
# course's top level has, and no placeholder (NN, *, <...>).
TOP = ("labs", "slides", "grader", "tests", "common", "solutions", "docs", "subprojects")
PATH_SPAN = re.compile(rf"^(?:{'|'.join(TOP)})(?:/[\w.+-]+)*/?$")


def test_the_kept_evidence_exists_and_is_what_released_code_reads():
    missing = [p for p in release.KEPT_EVIDENCE if not (REPO / p).is_file()]
    assert not missing, f"KEPT_EVIDENCE names files the repository lacks: {missing}"
    import sys

    sys.path.insert(0, str(REPO / "slides"))
    from deckgen import multi_gpu, view

    read = {profile.REFERENCE_RUN, view.DEFAULT_JSON, multi_gpu.LAB12_RUN}
    assert {p.relative_to(REPO).as_posix() for p in read} == set(release.KEPT_EVIDENCE)
    assert all(not release.left_out(p) for p in release.KEPT_EVIDENCE)
    assert release.left_out("tests/gpu_runs/h200/labs-b254ff3-log.txt")
    assert release.left_out("docs/grading-a-class.md") and release.left_out(release.STUDENT_README)


def test_gitattributes_keep_the_same_evidence():
    kept = {
        line.split()[0].lstrip("/")
        for line in (REPO / ".gitattributes").read_text().splitlines()
        if line.strip().endswith("-export-ignore") and "." in line.split()[0].rsplit("/", 1)[-1]
    }
    assert kept == set(release.KEPT_EVIDENCE)


def test_the_student_readme_is_short():
    lines = (REPO / release.STUDENT_README).read_text().splitlines()
    assert len(lines) <= 150, f"{release.STUDENT_README}: {len(lines)} lines, at most 150"


@needs_git
def test_a_small_release_has_the_students_readme_and_only_the_kept_evidence(tmp_path):
    repo = tmp_path / "course"
    files = {
        "README.md": "for instructors\n",
        release.STUDENT_README: "for students\n",
        "docs/grading-a-class.md": "instructors\n",
        "labs/01/a.cu": "x\n",
        "tests/gpu_runs/h200/labs-old.json": "{}\n",
        "tests/gpu_runs/README.md": "runs\n",
        **{p: "{}\n" for p in release.KEPT_EVIDENCE},
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    commit_all(repo)
    dest = tmp_path / "release"
    release.make(dest, repo=repo)
    assert (dest / "README.md").read_text() == "for students\n"
    assert not (dest / "docs").exists()
    kept = {p.relative_to(dest).as_posix() for p in (dest / "tests").rglob("*") if p.is_file()}
    assert kept == set(release.KEPT_EVIDENCE)
    assert release.stray(dest) == []
    (dest / "docs").mkdir()
    (dest / "docs" / "x.md").write_text("x")
    assert release.stray(dest) == ["docs/x.md"]


def commit_all(repo: Path) -> None:
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "add", "-A", "-f")
    commit(repo, "course")


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A release of a temporary commit of this working tree (its files that can
    reach a release, and a few that must not)."""
    if not GIT or not (REPO / ".git").exists():
        pytest.skip("this repository is not a git checkout (a copy without .git)")
    listed = git(REPO, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    wanted = [
        p
        for p in listed
        if p
        and (REPO / p).is_file()
        and (not release.left_out(p) or p == release.STUDENT_README or p.startswith("docs/"))
    ]
    root = tmp_path_factory.mktemp("rel")
    repo = root / "course"
    for p in wanted:
        (repo / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / p, repo / p)
    commit_all(repo)
    dest = root / "release"
    release.make(dest, repo=repo)
    return dest


def markdown_files(dest: Path) -> list[Path]:
    return sorted(p for p in dest.rglob("*.md") if ".git" not in p.relative_to(dest).parts)


def student_texts(dest: Path) -> list[Path]:
    labs = dest / "labs"
    skeletons = [p for p in labs.glob("*/*") if p.suffix in fence_statements.SOURCE_SUFFIXES]
    return markdown_files(dest) + sorted(labs.glob("*/hints.toml")) + sorted(skeletons)


def text_of(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix in fence_statements.SOURCE_SUFFIXES:
        return "\n".join(fence_statements.comments(text))
    return text


# A path part that is a placeholder (labs/NN_name/...) or what a build makes.
PLACEHOLDER = re.compile(r"NN|[*<>{}]|^build$|^\.venv$")


def names_a_missing_path(dest: Path, span: str) -> bool:
    """Whether a code span is a path of the repository the release lacks; a
    module may be named without its .py."""
    if not PATH_SPAN.match(span) or any(PLACEHOLDER.search(p) for p in span.split("/")):
        return False
    where = dest / span.rstrip("/")
    return not where.exists() and not where.with_suffix(".py").exists()


def test_the_release_readme_is_the_students_guide(released):
    assert (released / "README.md").read_bytes() == (REPO / release.STUDENT_README).read_bytes()
    assert not (released / "docs").exists()
    assert release.stray(released) == []


def test_every_relative_link_resolves_inside_the_release(released):
    broken = []
    for md in markdown_files(released):
        text = md.read_text(encoding="utf-8", errors="replace")
        text = fence_statements.CODE_BLOCK.sub("", text)
        for target in LINK.findall(text) + REF_LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue  # a URL or an anchor of the same page
            path = target.split("#", 1)[0].split("?", 1)[0]
            where = (md.parent / path).resolve()
            if not where.is_relative_to(released.resolve()) or not where.exists():
                broken.append(f"{md.relative_to(released)}: ({target})")
    assert not broken, f"{len(broken)} link(s) the release cannot follow:\n" + "\n".join(broken)


def test_no_student_text_names_what_the_release_lacks(released):
    problems = []
    for path in student_texts(released):
        text, rel = text_of(path), path.relative_to(released)
        problems += [f"{rel}: {m.group(0)!r}" for m in FORBIDDEN.finditer(text)]
        for span in fence_statements.INLINE.finditer(text):
            shown = span.group(2).strip()
            if names_a_missing_path(released, shown):
                problems.append(f"{rel}: `{shown}` is not in the release")
    assert not problems, (
        f"{len(problems)} mention(s) of what a student does not have:\n" + "\n".join(problems)
    )


def test_the_checks_see_a_broken_link_and_a_missing_path(tmp_path):
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "labmeta.py").write_text("")
    assert names_a_missing_path(tmp_path, "tests/gpu_runs/h200/labs-b254ff3-log.txt")
    assert names_a_missing_path(tmp_path, "solutions/")
    for fine in ("labs/NN_name/README.md", "slides/build/", "grader/labmeta", "grader/", "x/y"):
        assert not names_a_missing_path(tmp_path, fine), fine
    assert FORBIDDEN.search("see the Course notes") and FORBIDDEN.search("in solutions/04")
    assert LINK.findall('[a](../x.md#y) and ![b](figures/p.png "t")') == [
        "../x.md#y",
        "figures/p.png",
    ]
