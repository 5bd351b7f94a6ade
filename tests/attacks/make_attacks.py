#!/usr/bin/env python3
"""Writes the attacks of attacks.toml as submissions: one folder per attack
holding labs/ (the reference solutions, with the attack in one fence, or the
special file its `kind` names).

usage: make_attacks.py DEST [--lab LAB] [KEY=VALUE ...]   placeholders, e.g. OUT=/tmp/out"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "escapes"))
import make_escapes  # noqa: E402

# Raw system calls for bodies that need them (lab 01 includes no header for them).
SYS = (
    "auto sys = [](long nr, long a = 0, long b = 0, long c = 0, long d = 0) {\n"
    "    long ret;\n"
    '    register long r10 asm("r10") = d;\n'
    '    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)\n'
    '                 : "rcx", "r11", "memory");\n'
    "    return ret;\n"
    "  };"
)


def load(lab: str | None = None) -> list[dict]:
    attacks = tomllib.loads((HERE / "attacks.toml").read_text())["attack"]
    return [a for a in attacks if lab is None or a["lab"] == lab]


def fill(body: str, values: dict[str, str]) -> str:
    """The escapes' placeholders, and @SYS@."""
    return make_escapes.fill(body.replace("@SYS@", SYS), values)


def lab_file(lab: str) -> str:
    return "cpu_sum.cpp" if lab.startswith("01_") else "reduce.cu"


def write_attack(attack: dict, root: Path, values: dict[str, str]) -> Path:
    shutil.copytree(REPO / "solutions", root / "labs", ignore=shutil.ignore_patterns("README.md"))
    path = root / "labs" / attack["lab"] / attack.get("file", lab_file(attack["lab"]))
    if attack.get("kind") == "symlink":
        path.unlink()
        os.symlink(REPO / "solutions" / attack["lab"] / path.name, path)
        return root
    text = path.read_text()
    # `body` replaces fence `fence`; `prepend` tables put lines at the start of
    # other fences, keeping the solution's code after them.
    edits = [(attack["fence"], attack["body"], False)] if "fence" in attack else []
    edits += [(name, lines, True) for name, lines in attack.get("prepend", {}).items()]
    for name, lines, keep in edits:
        fence = re.compile(
            r"(// ---- your code here \("
            + re.escape(name)
            + r"\) ----\n)(.*?)(\n[ \t]*// ---- end ----)",
            re.S,
        )
        body = fill(lines.strip("\n"), dict(values, SELF=root.name))
        text, count = fence.subn(
            lambda m: m.group(1) + body + ("\n" + m.group(2) if keep else "") + m.group(3), text
        )
        if count != 1:
            raise SystemExit(f"{path}: fence {name} not found once")
    path.write_text(text)
    return root


def write_attacks(
    dest: Path,
    values: dict[str, str] | None = None,
    lab: str | None = None,
    names: list[str] | None = None,
) -> dict[str, Path]:
    """Writes DEST/<name>/labs for each attack (of `lab`, or those named)."""
    made = {}
    # PORT 9 (discard): nothing listens there; the suites give a listener's port.
    defaults = {"OUT": "/tmp/attack-out", "SOLUTION": str(REPO / "solutions"), "PORT": "9"}
    values = dict(defaults, **(values or {}))
    for attack in load(lab):
        if names is not None and attack["name"] not in names:
            continue
        made[attack["name"]] = write_attack(attack, dest / attack["name"], values)
    return made


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):  # --help is no folder to write
        print(__doc__, file=sys.stderr)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    args = sys.argv[2:]
    lab = args[args.index("--lab") + 1] if "--lab" in args else None
    pairs = dict(a.split("=", 1) for a in args if "=" in a)
    for name, path in write_attacks(Path(sys.argv[1]), pairs, lab).items():
        print(path)
