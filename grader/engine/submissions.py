"""Turning a student's submission into files the instructor's harness can build.

A submission is a folder, an archive (.zip, .tar, .tar.gz, .tgz) or a git
repository (a URL, or a path holding .git) that contains labs/ (or is labs/).
Only the fenced regions of the lab files are taken from it: everything
outside them, and every other file, comes from the instructor's copy, and
each difference found outside the fences becomes a note in the feedback.

Student files are hostile. A submission must be plain files and folders: a
symbolic link (to the instructor's solution, say), a hard link, a device, a
FIFO or a socket under its labs/ folder is refused, as is one too large,
with a ValueError naming the file; archives are checked before they are
unpacked. `open_submission` reads the lab files once, through
`read_submission_file` (no link followed, nothing opened that could block),
and `install` and `content_hash` use what it read.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import os
import re
import stat
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from .. import labmeta
from ..labmeta import Course
from .policy import fences
from .submission_files import absent, odd_kind, read_submission_file, refusal, scan_tree
from .submission_unpack import looks_remote, materialise

MAX_ID_BYTES = 128  # a student id, in UTF-8: well under a file name's 255


@dataclass
class Submission:
    student: str
    origin: str
    labs_dir: Path  # the submission's labs/ folder
    notes: list[str] = field(default_factory=list)
    workdir: tempfile.TemporaryDirectory | None = None
    root: Path | None = None  # its top folder (None: labs_dir); names are shown from it
    labs_parts: tuple[str, ...] = ()  # labs_dir below root, one name per folder
    # "lab_id/file" -> the bytes read at open time, None when missing: install and
    # content_hash use these, so a file swapped after the checks is never read.
    files: dict[str, bytes | None] = field(default_factory=dict)
    # lab_id -> its ANSWERS.md as text (the handout's questions; never built or
    # scored), read at open time like the files; problems reading them, as notes.
    answers: dict[str, str] = field(default_factory=dict)
    answer_notes: list[str] = field(default_factory=list)


# Student ids


def normalise_spec(spec: str) -> str:
    """One spelling per submission: a URL without trailing slashes; a path absolute,
    without trailing slashes, '.', '..' or symbolic links."""
    return spec.rstrip("/") if looks_remote(spec) else os.path.realpath(spec)


def _last_name(spec: str) -> str:
    """The last path or URL component, without the archive or .git suffix."""
    if looks_remote(spec):
        parts = re.split(r"[/:]", re.split(r"[?#]", spec)[0].rstrip("/"))
    else:
        parts = os.path.abspath(spec).split(os.sep)
    if len(parts) > 1 and parts[-1].lower() == ".git":  # /subs/alice/.git is alice's
        parts = parts[:-1]
    name = parts[-1]
    for suffix in (".tar.gz", ".tgz", ".tar", ".zip", ".git"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def safe_id(name: str) -> str:
    """`name` as a folder name: Unicode letters and digits and '._-' kept, anything
    else '_'; never empty, never starting with '.' or '-' (so never '.' or '..'),
    at most MAX_ID_BYTES of UTF-8."""
    name = unicodedata.normalize("NFC", name)  # é typed two ways is one student
    out = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
    if out.startswith((".", "-")):
        out = "_" + out
    while len(out.encode()) > MAX_ID_BYTES:
        out = out[:-1]
    return out or "student"


def _folded(student: str) -> str:
    # Alice and alice are one folder on a case-insensitive file system.
    return unicodedata.normalize("NFC", student).casefold()


def student_name(spec: str) -> str:
    """The id of one submission, without a roster: see student_ids."""
    return safe_id(_last_name(spec))


def student_ids(specs: list[str], roster: dict[str, str] | None = None) -> dict[str, str]:
    """spec -> student id, for the specs of one batch.

    An id depends only on its spec (or the roster's entry for it): the last
    path or URL component, made safe (student_name). Specs naming the same
    submission (trailing slash, relative and absolute) count once: the first is
    kept. Two submissions with one id are refused (ValueError naming both):
    rename one, or give a roster mapping spec (path or URL) -> id; specs the
    roster lacks keep their derived ids."""
    given = _roster(roster or {})
    ids: dict[str, str] = {}
    seen: set[str] = set()
    owners: dict[str, str] = {}
    for spec in specs:
        key = normalise_spec(spec)
        if key in seen:
            continue
        seen.add(key)
        student = given.get(key) or student_name(spec)
        if (other := owners.get(_folded(student))) is not None:
            raise ValueError(
                f"{other} and {spec} would both be graded as student '{student}': "
                "rename one of them, or give a roster that maps each submission "
                "to its own id"
            )
        owners[_folded(student)] = spec
        ids[spec] = student
    return ids


def read_roster(path: Path) -> dict[str, str]:
    """A roster file: CSV rows 'submission,student_id' (a header row naming the
    columns, blank rows and rows starting with '#' are skipped). Paths are as
    on the command line: relative to the current folder. The ids are checked
    by student_ids."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"roster {path}: cannot read it: {e}") from None
    roster: dict[str, str] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if number == 1 and len(cells) == 2 and cells[1].lower() in ("student_id", "student", "id"):
            continue
        if len(cells) != 2 or not all(cells):
            raise ValueError(
                f"roster {path}:{number}: expected 'submission,student_id', got {','.join(row)!r}"
            )
        if roster.get(cells[0], cells[1]) != cells[1]:
            raise ValueError(
                f"roster {path}:{number}: {cells[0]} is given two ids, "
                f"'{roster[cells[0]]}' and '{cells[1]}'"
            )
        roster[cells[0]] = cells[1]
    return roster


def _roster(roster: dict[str, str]) -> dict[str, str]:
    """The roster keyed by normalised spec, its ids checked: safe folder names, unique."""
    by_key: dict[str, str] = {}
    owners: dict[str, tuple[str, str]] = {}  # folded id -> (normalised spec, spec as given)
    for spec, student in roster.items():
        if not isinstance(student, str) or safe_id(student) != student:
            raise ValueError(
                f"roster: the id {student!r} of {spec} is not a safe folder name "
                "(letters, digits, '.', '_', '-'; not starting with '.' or '-')"
            )
        key = normalise_spec(spec)
        if by_key.get(key, student) != student:
            raise ValueError(f"roster: {spec} is given two ids, '{by_key[key]}' and '{student}'")
        prior = owners.get(_folded(student))
        if prior is not None and prior[0] != key:
            raise ValueError(f"roster: the id '{student}' is given to both {prior[1]} and {spec}")
        by_key[key] = student
        owners[_folded(student)] = (key, spec)
    return by_key


# --------------------------------------------------------------------------
# Reading student files safely
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# Archives: checked before anything is unpacked
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# Opening a submission
# --------------------------------------------------------------------------


def _find_labs(root: Path, below: tuple[str, ...] = ()) -> list[str] | None:
    """labs/ under root/below, as the folder names from root (below itself when it
    is labs/), or None. Never descends through a link."""
    here = root.joinpath(*below)
    try:
        labs = os.lstat(here / "labs")
    except FileNotFoundError:
        labs = None
    if labs is not None:
        if (why := odd_kind(labs)) is not None:
            raise refusal("/".join([*below, "labs"]), why)
        if stat.S_ISDIR(labs.st_mode):
            return [*below, "labs"]
    with os.scandir(here) as it:
        folders = [e for e in it if e.is_dir()]  # links included: refused below if used
    if any(e.name[:2].isdigit() for e in folders):
        return list(below)  # the submission is the labs/ folder itself
    if len(folders) == 1 and len(below) < 3:  # an archive with one top folder
        if folders[0].is_symlink():
            raise refusal("/".join([*below, folders[0].name]), "a symbolic link")
        return _find_labs(root, (*below, folders[0].name))
    return None


@functools.lru_cache(maxsize=1)
def _default_course() -> Course:
    return labmeta.load()


def _read_lab_files(root: Path, labs_parts: list[str], course: Course) -> dict[str, bytes | None]:
    return {
        f"{lab.id}/{name}": read_submission_file(root, [*labs_parts, lab.id, name])
        for lab in course.labs
        for name in lab.files
    }


def open_submission(
    spec: str, student: str | None = None, course: Course | None = None
) -> Submission:
    """Materialises a submission and reads its lab files (course's; default: the
    course of grader/labs.toml); raises ValueError, '<spec>: <why>', if it cannot
    or if the submission is not plain files. student: its id (default:
    student_name(spec); see student_ids)."""
    workdir = None
    try:
        workdir, root = materialise(spec)
        labs_parts = _find_labs(root)
        if labs_parts is None:
            raise ValueError("no labs/ folder in the submission")
        scan_tree(root, labs_parts)
        files = _read_lab_files(root, labs_parts, course or _default_course())
        answers, answer_notes = _read_answers(root, labs_parts, course or _default_course())
    except (ValueError, OSError) as e:  # an unreadable folder is this student's problem only
        if workdir is not None:
            workdir.cleanup()
        why = e if isinstance(e, ValueError) else f"cannot read the submission: {e}"
        raise ValueError(f"{spec}: {why}") from None
    except BaseException:
        if workdir is not None:
            workdir.cleanup()
        raise
    return Submission(
        student or student_name(spec),
        spec,
        root.joinpath(*labs_parts),
        workdir=workdir,
        root=root,
        labs_parts=tuple(labs_parts),
        files=files,
        answers=answers,
        answer_notes=answer_notes,
    )


def _lab_bytes(sub: Submission, lab_id: str, name: str) -> bytes | None:
    """What open_submission read; a file it did not read (another course) is read
    now, just as safely."""
    key = f"{lab_id}/{name}"
    if key in sub.files:
        return sub.files[key]
    root = sub.root if sub.root is not None else sub.labs_dir
    return read_submission_file(root, [*sub.labs_parts, lab_id, name])


def content_hash(sub: Submission, course: Course) -> str:
    """Hash of the student's lab files and of their answers (where they wrote
    any): a changed resubmission is graded again."""
    h = hashlib.sha256()
    for lab in course.labs:
        for name in lab.files:
            data = _lab_bytes(sub, lab.id, name)
            h.update(f"{lab.id}/{name}\0".encode())
            h.update(data if data is not None else b"<missing>")
    for lab_id, text in sorted(sub.answers.items()):
        h.update(f"{lab_id}/{ANSWERS}\0".encode() + text.encode())
    return h.hexdigest()[:16]


ANSWERS = "ANSWERS.md"
MAX_ANSWERS_BYTES = 64 << 10
TEMPLATE_LABS = Path(__file__).resolve().parents[2] / "labs"


def _read_answers(
    root: Path,
    labs_parts: list[str] | tuple[str, ...],
    course: Course,
    template_labs: Path = TEMPLATE_LABS,
) -> tuple[dict[str, str], list[str]]:
    """Each lab's ANSWERS.md as text, for the instructor. A file still equal to the
    template is left out; one that is too large or unreadable is named in a note,
    left out, and costs nothing (a link anywhere refuses the whole submission,
    as scan_tree does for every file)."""
    answers, notes = {}, []
    for lab in course.labs:
        try:
            data = read_submission_file(
                root, [*labs_parts, lab.id, ANSWERS], limit=MAX_ANSWERS_BYTES
            )
        except ValueError as e:
            notes.append(f"answers not read: {e}")
            continue
        if data is None:
            continue
        template = template_labs / lab.id / ANSWERS
        if template.is_file() and data == template.read_bytes():
            continue
        answers[lab.id] = data.decode("utf-8", errors="replace")
    return answers, notes


def _as_text(data: bytes) -> str:
    # As open(..., "r") reads it: universal newlines, so a lone CR is a line
    # break for the fences and the compiler alike.
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def not_submitted(sub: Submission, labs: list[labmeta.Lab]) -> list[labmeta.Lab]:
    """The labs of `labs` whose folder the submission lacks: nothing built or run."""
    root = sub.root if sub.root is not None else sub.labs_dir
    return [l for l in labs if not os.path.lexists(root.joinpath(*sub.labs_parts, l.id))]


def install(
    sub: Submission,
    course: Course,
    harness_labs: Path,
    dest_labs: Path,
    graded: list[labmeta.Lab] | None = None,
) -> list[str]:
    """Writes the student's fences into the instructor's lab files under dest_labs;
    returns notes on the `graded` labs (default: all) the submission holds: files
    missing, code outside the fences (restored), fences broken or refused (the
    skeleton's kept). A lab not submitted at all: not_submitted names it once."""
    notes: list[str] = []
    shown = {lab.id for lab in (graded if graded is not None else course.labs)}
    shown -= {lab.id for lab in not_submitted(sub, list(course.labs))}
    for lab in course.labs:
        said = notes if lab.id in shown else []
        for name in lab.files:
            harness = (harness_labs / lab.id / name).read_text()
            data = _lab_bytes(sub, lab.id, name)
            out = dest_labs / lab.id / name
            out.parent.mkdir(parents=True, exist_ok=True)
            if data is None:
                why = absent(sub.root or sub.labs_dir, [*sub.labs_parts, lab.id, name])
                said.append(f"{lab.id}/{name} {why}: graded as the skeleton")
                text = harness
            else:
                text, file_notes = _install_file(_as_text(data), harness, f"{lab.id}/{name}")
                said += file_notes
            # Fresh content and a fresh mtime: ninja rebuilds exactly what changed.
            if not out.exists() or out.read_text() != text:
                out.write_text(text)
    for extra in ("tests", "common", "grader"):
        if (sub.labs_dir.parent / extra).is_dir() and sub.labs_dir.name == "labs":
            notes.append(f"the submission's {extra}/ was ignored: grading uses the instructor's")
    return notes


def _install_file(theirs: str, harness: str, where: str) -> tuple[str, list[str]]:
    try:
        text, notes = fences.transplant_checked(theirs, harness, where)
        missing = {f.name for f in fences.extract(harness)} - {
            f.name for f in fences.extract(theirs)
        }
    except fences.FenceError as e:
        return harness, [f"{where}: {e}; graded as the skeleton"]
    if missing:
        notes.append(
            f"{where}: fence(s) {', '.join(sorted(missing))} not found; the skeleton's "
            "TODO was kept there"
        )
    if fences.outside(theirs) != fences.outside(harness):
        notes.append(
            f"{where}: changes outside the fenced regions were replaced by the instructor's harness"
        )
    return text, notes
