#!/usr/bin/env python3
"""Writes the escape attempts of escapes.toml as submissions, one folder per
attempt holding labs/ (the reference solutions, with the attempt as lab 01's
sum_sequential).

usage: make_escapes.py DEST [KEY=VALUE ...]   placeholders, e.g. CANARY=/tmp/canary
                                              PORT=40001 (the rest have defaults)"""

from __future__ import annotations

import re
import shutil
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LAB = "01_cpu_baseline"
FENCE = re.compile(
    r"(// ---- your code here \(sum_sequential\) ----\n).*?(\s*// ---- end ----)", re.S
)


def load() -> list[dict]:
    return tomllib.loads((HERE / "escapes.toml").read_text())["escape"]


def defaults() -> dict[str, str]:
    return {
        "SOLUTION": str(REPO / "solutions" / LAB / "cpu_sum.cpp"),
        "HIDDEN": str(REPO / "tests" / "cpu_sum_test.cpp"),
        "OTHER": str(REPO / "solutions" / LAB / "cpu_sum.cpp"),
        "CANARY": "/tmp/escape-canary",
        "WORKER": "/tmp/escape-worker",
        "OUT": "/tmp/escape-out",
        "PORT": "40001",
    }


def fill(body: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        body = body.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z]+@", body)
    if left:
        raise ValueError(f"no value for {', '.join(sorted(set(left)))}")
    return body


def write_escapes(
    dest: Path, values: dict[str, str] | None = None, names: list[str] | None = None
) -> dict[str, Path]:
    """Writes DEST/<name>/labs for each escape (or those named); returns name -> folder."""
    values = dict(defaults(), **(values or {}))
    made = {}
    for esc in load():
        if names is not None and esc["name"] not in names:
            continue
        root = dest / esc["name"]
        shutil.copytree(
            REPO / "solutions", root / "labs", ignore=shutil.ignore_patterns("README.md")
        )
        path = root / "labs" / LAB / "cpu_sum.cpp"
        text = path.read_text()
        body = fill(esc["body"].strip("\n"), values)
        new, count = FENCE.subn(lambda m: m.group(1) + body + m.group(2), text)
        if count != 1:
            raise SystemExit(f"{path}: the sum_sequential fence was not found once")
        path.write_text(new)
        made[esc["name"]] = root
    return made


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    pairs = dict(a.split("=", 1) for a in sys.argv[2:])
    for name, path in write_escapes(Path(sys.argv[1]), pairs).items():
        print(path)
