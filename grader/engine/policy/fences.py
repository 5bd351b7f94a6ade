"""The fenced student regions of a lab file:

    // ---- your code here (name) ----
    ...the student's code...
    // ---- end ----

A student's fence is pasted into the instructor's file, so it must be a block:
code that stays where it is put. `validate` checks that, `extract` records its
findings on every fence, and `transplant_checked` pastes only the fences that
pass (the skeleton's code stays in the others, with a note saying why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fence_rules import validate

BEGIN = re.compile(r"^\s*// ---- your code here \((?P<name>[^)]+)\) ----\s*$")
END = re.compile(r"^\s*// ---- end ----\s*$")


class FenceError(ValueError):
    pass


@dataclass(frozen=True)
class Fence:
    name: str
    body: str  # the lines between the markers
    first_line: int  # 1-based line number of the first body line
    problems: tuple[str, ...] = ()  # what `validate` found; empty: safe to transplant


def extract(text: str, where: str = "file") -> list[Fence]:
    """The fences of a file, each with the problems `validate` finds in it.

    Broken markers and a fence name used twice are errors of the whole file
    (FenceError): which of two bodies is meant cannot be guessed."""
    fences: list[Fence] = []
    seen: dict[str, int] = {}
    name: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if (m := BEGIN.match(line)) is not None:
            if name is not None:
                raise FenceError(f"{where}:{number}: fence {m['name']} opens inside fence {name}")
            if m["name"] in seen:
                raise FenceError(
                    f"{where}:{number}: fence {m['name']} appears twice (first on "
                    f"line {seen[m['name']]}); keep one"
                )
            name, start, body = m["name"], number + 1, []
            seen[name] = number
        elif END.match(line):
            if name is None:
                raise FenceError(f"{where}:{number}: '---- end ----' without an open fence")
            text_of_body = "".join(body)
            fences.append(Fence(name, text_of_body, start, tuple(validate(text_of_body, start))))
            name = None
        elif name is not None:
            body.append(line)
    if name is not None:
        raise FenceError(f"{where}: fence {name} is never closed")
    return fences


def outside(text: str) -> str:
    """The file with every fence body removed: what the student must not change."""
    kept, inside = [], False
    for line in text.splitlines(keepends=True):
        if BEGIN.match(line):
            inside = True
            kept.append(line)
        elif END.match(line):
            inside = False
            kept.append(line)
        elif not inside:
            kept.append(line)
    return "".join(kept)


def transplant_checked(student: str, harness: str, where: str = "file") -> tuple[str, list[str]]:
    """The harness file with each fence body replaced by the student's, by fence name,
    and notes for the student.

    A student fence that fails `validate` is not used: the harness's body stays
    there and a note names the fence and its problems. Fences of the student's
    that the harness lacks are ignored. Raises FenceError when either file's
    markers are broken or name a fence twice."""
    ours = {f.name for f in extract(harness, f"{where} (instructor's copy)")}
    theirs: dict[str, str] = {}
    notes: list[str] = []
    for fence in extract(student, where):
        if fence.name not in ours:
            continue
        if fence.problems:
            notes.append(
                f"{where}: fence {fence.name} was not used, the skeleton's code is graded "
                f"there instead: {'; '.join(fence.problems)}"
            )
        else:
            theirs[fence.name] = fence.body
    return _paste(theirs, harness), notes


def transplant(student: str, harness: str, where: str = "file") -> str:
    """`transplant_checked` without its notes.

    The choice made: `transplant` keeps its old signature (it returns the text)
    for old callers, and `transplant_checked` is the new function that also
    returns the notes. Both are equally strict: an invalid fence is not pasted."""
    return transplant_checked(student, harness, where)[0]


def _paste(bodies: dict[str, str], harness: str) -> str:
    out, inside = [], None
    for line in harness.splitlines(keepends=True):
        if (m := BEGIN.match(line)) is not None:
            inside = m["name"]
            out.append(line)
            if inside in bodies:
                out.append(bodies[inside])
        elif END.match(line):
            inside = None  # a fence the student lost or broke keeps the harness's TODO
            out.append(line)
        elif inside is None or inside not in bodies:
            out.append(line)
    return "".join(out)
