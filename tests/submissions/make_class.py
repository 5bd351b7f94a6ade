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


def write_class(dest: Path, archives: bool = False) -> list[Path]:
    spec = tomllib.loads((HERE / "class.toml").read_text())
    made = []
    for k, student in enumerate(spec["student"]):
        root = dest / student["name"]
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
        if archives and k % 3 == 1:
            out = dest / f"{student['name']}.zip"
            with zipfile.ZipFile(out, "w") as z:
                for f in sorted(root.rglob("*")):
                    z.write(f, f.relative_to(dest))
            shutil.rmtree(root)
            root = out
        elif archives and k % 3 == 2:
            out = dest / f"{student['name']}.tar.gz"
            with tarfile.open(out, "w:gz") as t:
                t.add(root, arcname=student["name"])
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
