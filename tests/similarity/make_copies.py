#!/usr/bin/env python3
"""Writes the similarity fixtures: honest students, disguised copies and the
class of ten, as submissions (labs/NN_name/ trees), a public-style corpus
folder, and key.json saying which document copies which.

usage: make_copies.py DEST

DEST/subs/<student>/labs/...   every submission (labs not written: the skeleton)
DEST/corpus/public/*.cu        the public-style kernel (what an instructor drops in)
DEST/key.json                  {"copies": [{student, lab, source}], "honest": [...]}

Sources of copies: each lab's reference solution (the leaked solution),
the honest students of honest/ (a classmate), and pasted/ (the public-style
kernel of public/ fitted into lab 05). Each is disguised by rename, reformat,
reorder and all three (disguise.py)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "submissions"), str(HERE)]
import disguise  # noqa: E402
import make_class  # noqa: E402
from grader import labmeta  # noqa: E402
from grader.engine.policy import fences  # noqa: E402

HOW = ("rename", "reformat", "reorder", "all")
SAMPLES = "public/reduction_kernel_style.cu"


def fill(skeleton: str, bodies: dict[str, str]) -> str:
    """The skeleton with the named fences' bodies replaced."""
    lines = skeleton.splitlines(keepends=True)
    for f in sorted(fences.extract(skeleton), key=lambda f: -f.first_line):
        if f.name in bodies:
            end = f.first_line - 1 + len(f.body.splitlines())
            lines[f.first_line - 1 : end] = [bodies[f.name].rstrip("\n") + "\n"]
    return "".join(lines)


def write_student(
    subs: Path, student: str, labs: dict[str, dict[str, str]], course: labmeta.Course
) -> None:
    """labs: lab id -> fence name -> body; every other lab stays the skeleton."""
    root = subs / student / "labs"
    shutil.copytree(REPO / "labs", root, ignore=shutil.ignore_patterns("README.md"))
    for lab_id, bodies in labs.items():
        for name in course.lab(lab_id).files:
            path = root / lab_id / name
            path.write_text(fill(path.read_text(), bodies))


def honest_bodies() -> dict[str, dict[str, dict[str, str]]]:
    """student -> lab -> fence -> body, from honest/<student>/<lab>.<fence>.cu."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path in sorted((HERE / "honest").glob("*/*.cu")):
        lab, fence = path.stem.split(".")
        out.setdefault(path.parent.name, {}).setdefault(lab, {})[fence] = path.read_text()
    return out


def reference_bodies(course: labmeta.Course) -> dict[str, dict[str, str]]:
    return {
        lab.id: {
            f.name: f.body
            for name in lab.files
            for f in fences.extract((REPO / "solutions" / lab.id / name).read_text())
        }
        for lab in course.labs
    }


def make(dest: Path) -> dict:
    course = labmeta.load()
    subs = dest / "subs"
    copies, seed = [], 0
    honest = honest_bodies()
    for student, labs in honest.items():
        write_student(subs, student, labs, course)
    for k, how in enumerate(HOW):
        # The leaked solution, every lab, one disguise per copier.
        labs = {}
        for lab_id, bodies in reference_bodies(course).items():
            labs[lab_id] = {
                f: disguise.disguise(b, how, seed := seed + 1)[0] for f, b in bodies.items()
            }
            copies.append({"student": f"ref-{how}", "lab": lab_id, "source": "reference"})
        write_student(subs, f"ref-{how}", labs, course)
        # A classmate's work: each honest student is copied with another disguise.
        source = sorted(honest)[k % len(honest)]
        labs = {
            lab_id: {f: disguise.disguise(b, how, seed := seed + 1)[0] for f, b in bodies.items()}
            for lab_id, bodies in honest[source].items()
        }
        write_student(subs, f"peer-{how}-of-{source}", labs, course)
        copies += [
            {"student": f"peer-{how}-of-{source}", "lab": lab_id, "source": source}
            for lab_id in labs
        ]
        # The public kernel, pasted into lab 05.
        pasted = {
            p.stem.split(".")[1]: disguise.disguise(p.read_text(), how, seed := seed + 1)[0]
            for p in (HERE / "pasted").glob("05_*.cu")
        }
        write_student(subs, f"public-{how}", {"05_two_loads_per_thread": pasted}, course)
        copies.append(
            {
                "student": f"public-{how}",
                "lab": "05_two_loads_per_thread",
                "source": "public/reduce_sample_style.cu",
            }
        )
        # Kernels of the samples-style file, one of many there, pasted into
        # labs 02-05 with the sample's names declared as aliases of the lab's.
        labs = {}
        for p in sorted((HERE / "pasted" / "samples").glob("*.cu")):
            lab_id, fence = p.stem.split(".")
            labs.setdefault(lab_id, {})[fence] = disguise.disguise(
                p.read_text(), how, seed := seed + 1
            )[0]
        write_student(subs, f"samples-{how}", labs, course)
        copies += [
            {"student": f"samples-{how}", "lab": lab_id, "source": SAMPLES} for lab_id in labs
        ]
    made = make_class.write_class(subs)
    for p in made:
        if p.name != "bob":  # the class of ten is built from the reference (bob: the skeleton)
            copies += [
                {"student": p.name, "lab": lab.id, "source": "reference"} for lab in course.labs
            ]
    (dest / "corpus" / "public").mkdir(parents=True)
    for public in sorted((HERE / "public").glob("*.cu")):
        shutil.copy(public, dest / "corpus" / "public")
    key = {
        "copies": copies,
        "honest": sorted(honest) + ["reference", "bob"],
        "class_of_ten": [p.name for p in made],
    }
    (dest / "key.json").write_text(json.dumps(key, indent=1) + "\n")
    return key


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    key = make(Path(sys.argv[1]))
    print(f"{len(key['copies'])} copies, honest: {', '.join(key['honest'])}")
