"""The fenced student regions of a lab file:

    // ---- your code here (name) ----
    ...the student's code...
    // ---- end ----
"""
from __future__ import annotations

import re
from dataclasses import dataclass

BEGIN = re.compile(r"^\s*// ---- your code here \((?P<name>[^)]+)\) ----\s*$")
END = re.compile(r"^\s*// ---- end ----\s*$")


class FenceError(ValueError):
    pass


@dataclass(frozen=True)
class Fence:
    name: str
    body: str          # the lines between the markers
    first_line: int    # 1-based line number of the first body line


def extract(text: str, where: str = "file") -> list[Fence]:
    fences, name, start, body = [], None, 0, []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if (m := BEGIN.match(line)) is not None:
            if name is not None:
                raise FenceError(f"{where}:{number}: fence {m['name']} opens inside fence {name}")
            name, start, body = m["name"], number + 1, []
        elif END.match(line):
            if name is None:
                raise FenceError(f"{where}:{number}: '---- end ----' without an open fence")
            fences.append(Fence(name, "".join(body), start))
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


def transplant(student: str, harness: str, where: str = "file") -> str:
    """The harness file with each fence body replaced by the student's, by fence name."""
    theirs = {f.name: f.body for f in extract(student, where)}
    out, inside = [], None
    for line in harness.splitlines(keepends=True):
        if (m := BEGIN.match(line)) is not None:
            inside = m["name"]
            out.append(line)
            if inside in theirs:
                out.append(theirs[inside])
        elif END.match(line):
            if inside is not None and inside not in theirs:
                pass  # the student's file lost this fence: the harness keeps its TODO
            inside = None
            out.append(line)
        elif inside is None or inside not in theirs:
            out.append(line)
    return "".join(out)
