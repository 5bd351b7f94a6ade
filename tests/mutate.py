#!/usr/bin/env python3
"""Deliberately broken solutions ("mutants"), made from the real ones at build time.

Each tests/mutants/<lab>.toml lists classic mistakes as text substitutions on
the lab's solution. A mutant is kept as a substitution, not as a copy of the
solution, so it always breaks the current code and cannot drift from it; a
substitution that no longer matches exactly once stops the build.

  mutate.py list SPEC                      lines "lab name file hints needs sanitize filter"
  mutate.py apply SPEC NAME SOLUTION OUT   writes the broken file
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path


def load(spec: Path) -> list[dict]:
    with open(spec, "rb") as f:
        mutants = tomllib.load(f).get("mutant", [])
    for m in mutants:
        for key in ("name", "file", "replace", "with", "why"):
            if key not in m:
                raise SystemExit(f"{spec}: mutant {m.get('name', '?')} lacks {key!r}")
        if "hints" not in m and "sanitize" not in m:
            raise SystemExit(f"{spec}: mutant {m['name']} needs hints or sanitize")
    return mutants


def listing(spec: Path) -> str:
    return "".join(
        f"{spec.stem} {m['name']} {m['file']} {','.join(m.get('hints', ['-']))} "
        f"{m.get('needs', '-')} {m.get('sanitize', '-')} {m.get('filter', '-')}\n"
        for m in load(spec)
    )


def apply(spec: Path, name: str, source: Path, out: Path, header: bool = True) -> None:
    m = next((m for m in load(spec) if m["name"] == name), None)
    if m is None:
        raise SystemExit(f"{spec}: no mutant named {name}")
    text = source.read_text()
    count = text.count(m["replace"])
    if count != 1:
        raise SystemExit(
            f"{spec}: mutant {name}: the text to replace occurs {count} times in "
            f"{source}, not once; update the mutant to the solution"
        )
    banner = (
        f"// MUTANT {spec.stem}/{name}, made by tests/mutate.py from {source.name}:\n"
        f"// {m['why']}\n"
    )
    out.write_text((banner if header else "") + text.replace(m["replace"], m["with"]))


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "list":
        sys.stdout.write(listing(Path(argv[2])))
        return 0
    if len(argv) == 6 and argv[1] == "apply":
        apply(Path(argv[2]), argv[3], Path(argv[4]), Path(argv[5]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
