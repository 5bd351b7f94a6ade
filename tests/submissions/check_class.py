#!/usr/bin/env python3
"""Compares a batch's output (OUT/students/*/result.json) with class.toml.

usage: check_class.py OUT     exit 0 when every expectation holds"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_class import copy_name  # noqa: E402


def outcome(lab: dict) -> str:
    """The expectation word that describes a graded lab."""
    ff = lab.get("first_failure") or {}
    if lab["status"] in ("build_failed", "policy", "skipped"):
        return lab["status"]
    if ff.get("status") in ("timed_out", "crashed"):
        return ff["status"]
    if lab["points"] == lab["max_points"]:
        return "full"
    if ff.get("hint") == "not_implemented" and lab["points"] == 0:
        return "zero_not_implemented"
    return ff.get("hint", "?")


def expectations(student: dict, labs: list[str] | None) -> dict[str, str]:
    """A student's expected outcome per lab graded (`labs`; None: class.toml's).
    class.toml names the labs its students' mistakes are in; every other lab
    of `labs` is the base's as it is, untouched by make_class."""
    if labs is None:
        return dict(student["expect"])
    untouched = "full" if student["base"] == "solutions" else "zero_not_implemented"
    return {lab: student["expect"].get(lab, untouched) for lab in labs}


def check(out: Path, copies: int = 1, labs: list[str] | None = None) -> list[str]:
    """What differs from class.toml's expectations; copies as make_class wrote
    them; `labs`: the labs the batch graded, when more than class.toml's."""
    spec = tomllib.loads((HERE / "class.toml").read_text())
    problems = []
    for c in range(copies):
        for student in spec["student"]:
            named = dict(student, name=copy_name(student["name"], c))
            problems += _check_student(out, dict(named, expect=expectations(student, labs)))
    for name in ("gradebook.csv",):
        if not (out / name).exists():
            problems.append(f"no {name}")
    return problems


def _check_student(out: Path, student: dict) -> list[str]:
    problems = []
    path = out / "students" / student["name"] / "result.json"
    if not path.exists():
        return [f"{student['name']}: no result"]
    res = json.loads(path.read_text())
    labs = {l["lab"]: l for l in res["labs"]}
    for lab, want in student["expect"].items():
        got = outcome(labs[lab]) if lab in labs else "not graded"
        ok = got == want or (want == "crashed" and got in ("crashed", "cuda_error"))
        if not ok or (want != "full" and labs[lab]["points"] == labs[lab]["max_points"]):
            problems.append(f"{student['name']}: {lab}: expected {want}, got {got}")
    for note in student.get("expect_notes", []):
        if not any(note in n for n in res["notes"]):
            problems.append(f"{student['name']}: missing note {note!r}")
    return problems


if __name__ == "__main__":
    problems = check(Path(sys.argv[1]))
    for p in problems:
        print("NOT OK:", p)
    print("class check:", "OK" if not problems else f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)
