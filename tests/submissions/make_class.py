#!/usr/bin/env python3
"""Writes the submissions of class.toml, one folder per student holding labs/.

usage: make_class.py DEST [--archives]   (--archives: alternate folders, .zip
and .tar.gz, so that batch reads every kind of submission)"""

from __future__ import annotations

import shutil
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))
import mutate  # noqa: E402


FENCE_OPENS = "// ---- your code here"


def copy_name(name: str, copy: int) -> str:
    """The name of the copy-th copy of a class.toml student (0: the student)."""
    return name if copy == 0 else f"{name}-{copy + 1}"


def _make_distinct(root: Path, who: str) -> None:
    # A line of its own in every fence: no copy's file is byte-equal to another
    # student's, so each is compiled as a real class's would be (a worker skips
    # the build of a file equal to the one it last graded).
    for path in sorted((root / "labs").rglob("*")):
        if path.is_file() and FENCE_OPENS in (text := path.read_text(errors="replace")):
            lines = text.split("\n")
            at = next(i for i, line in enumerate(lines) if FENCE_OPENS in line)
            lines.insert(at + 1, f"  // submitted by {who}")
            path.write_text("\n".join(lines))


def write_class(dest: Path, archives: bool = False, copies: int = 1) -> list[Path]:
    """The class of class.toml under dest; with copies > 1, each student that many
    times (named by copy_name), every lab file distinct."""
    spec = tomllib.loads((HERE / "class.toml").read_text())
    made = []
    students = [
        (copy_name(student["name"], c), student)
        for c in range(copies)
        for student in spec["student"]
    ]
    for k, (name, student) in enumerate(students):
        root = dest / name
        base = REPO / ("solutions" if student["base"] == "solutions" else "labs")
        shutil.copytree(base, root / "labs", ignore=shutil.ignore_patterns("README.md"))
        for ref in student.get("mutants", []):
            lab, name = ref.split("/")
            m = next(
                m
                for m in mutate.load(REPO / "tests" / "mutants" / f"{lab}.toml")
                if m["name"] == name
            )
            path = root / "labs" / lab / m["file"]
            mutate.apply(REPO / "tests" / "mutants" / f"{lab}.toml", name, path, path, header=False)
        for edit in student.get("edits", []):
            path = root / "labs" / edit["lab"] / edit.get("file", "reduce.cu")
            text = path.read_text()
            if text.count(edit["replace"]) != 1:
                raise SystemExit(f"{student['name']}: edit of {path} does not match once")
            path.write_text(text.replace(edit["replace"], edit["with"]))
        if copies > 1:
            _make_distinct(root, name)
        if archives and k % 3 == 1:
            out = dest / f"{name}.zip"
            with zipfile.ZipFile(out, "w") as z:
                for f in sorted(root.rglob("*")):
                    z.write(f, f.relative_to(dest))
            shutil.rmtree(root)
            root = out
        elif archives and k % 3 == 2:
            out = dest / f"{name}.tar.gz"
            with tarfile.open(out, "w:gz") as t:
                t.add(root, arcname=name)
            shutil.rmtree(root)
            root = out
        made.append(root)
    return made


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    for p in write_class(Path(sys.argv[1]), "--archives" in sys.argv):
        print(p)
