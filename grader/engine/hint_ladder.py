"""A lab's hints, taken one at a time: `labs/NN_name/hints.toml` and the count
of hints the student took, `labs/NN_name/.hints-taken`.

The hints are a ladder of rungs in a fixed order (an idea, then a picture or a
worked small case, then the steps in words): a student who asks for help gets
the least that unblocks them first, and climbs only as far as they need.

The count is the student's own record, submitted with the lab and shown in the
feedback. It is read, never trusted: it changes no points, and a count that is
not a number reads as none taken.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..infra.atomic import write_atomic
from .submission_files import read_submission_file
from .submissions import Submission

HINTS = "hints.toml"
TAKEN = ".hints-taken"
# The rungs, in the order a hints.toml must climb them.
KINDS = ("idea", "picture", "structure")
MIN_HINTS = 3
MAX_TAKEN_BYTES = 64


@dataclass(frozen=True)
class Hint:
    kind: str
    text: str


def parse(text: str, where: str = HINTS) -> list[Hint]:
    """The hints of a hints.toml; ValueError naming every problem.

    A file is valid when it holds at least MIN_HINTS `[[hint]]` tables, each
    with a `kind` from KINDS and a non-empty `text`, the kinds never going
    back down the ladder and every rung present."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{where}: not valid TOML: {e}") from None
    tables = data.get("hint")
    problems = [f"unknown top-level key {k!r}" for k in data if k != "hint"]
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ValueError(f"{where}: needs a list of [[hint]] tables")
    hints = []
    for number, table in enumerate(tables, 1):
        kind, body = table.get("kind"), table.get("text")
        extra = sorted(set(table) - {"kind", "text"})
        if extra:
            problems.append(f"hint {number}: unknown key(s) {', '.join(extra)}")
        if kind not in KINDS:
            problems.append(f"hint {number}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(body, str) or not body.strip():
            problems.append(f"hint {number}: text is missing or empty")
        hints.append(Hint(str(kind), body.strip() if isinstance(body, str) else ""))
    ranks = [KINDS.index(h.kind) for h in hints if h.kind in KINDS]
    if ranks != sorted(ranks):
        problems.append(f"kinds out of order ({', '.join(h.kind for h in hints)}): {KINDS}")
    missing = [k for k in KINDS if k not in {h.kind for h in hints}]
    if missing:
        problems.append(f"no hint of kind {', '.join(missing)}")
    if len(hints) < MIN_HINTS:
        problems.append(f"{len(hints)} hint(s): a lab has at least {MIN_HINTS}")
    if problems:
        raise ValueError(f"{where}: " + "; ".join(problems))
    return hints


def load(lab_dir: Path) -> list[Hint]:
    """The lab's hints; FileNotFoundError when the lab has none, ValueError when
    its file is broken."""
    path = lab_dir / HINTS
    return parse(path.read_text(encoding="utf-8"), str(path))


def count_of(data: bytes | str | None) -> int | None:
    """The count a .hints-taken holds; None when there is none or it is no count."""
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    text = text.strip()
    return int(text) if text.isdigit() and len(text) <= 6 else None


def taken(lab_dir: Path) -> int:
    """How many hints the student has taken in this lab folder (0 when none)."""
    path = lab_dir / TAKEN
    try:
        return count_of(path.read_text(encoding="utf-8", errors="replace")) or 0
    except (FileNotFoundError, IsADirectoryError):
        return 0


def record(lab_dir: Path, count: int) -> None:
    write_atomic(lab_dir / TAKEN, f"{count}\n")


def taken_by(sub: Submission, lab_ids: list[str]) -> dict[str, int]:
    """A submission's count of hints taken, by lab."""
    root = sub.root if sub.root is not None else sub.labs_dir
    return taken_in_submission(root, sub.labs_parts, lab_ids)


def taken_in_submission(
    root: Path, labs_parts: tuple[str, ...] | list[str], lab_ids: list[str]
) -> dict[str, int]:
    """Each lab's count of hints taken, as a submission holds them (read as its
    lab files are: no link followed); labs without a readable count are left out."""
    counts = {}
    for lab_id in lab_ids:
        try:
            data = read_submission_file(root, [*labs_parts, lab_id, TAKEN], MAX_TAKEN_BYTES)
        except ValueError:
            continue
        if (n := count_of(data)) is not None:
            counts[lab_id] = n
    return counts


def taken_line(count: int | None) -> str:
    """The feedback's words for a count (empty when the student kept none)."""
    if count is None:
        return ""
    return f"hints taken: {count} (`python3 -m grader hint`; not scored)"
