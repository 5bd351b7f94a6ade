#!/usr/bin/env python3
"""meson test `clang-format`: every C++/CUDA file of the project is as
clang-format 14 lays it out with the root .clang-format; exit 0 when so,
1 with clang-format's findings when not, 77 (a skip, with the reason) where
clang-format 14 is not installed.

usage: check.py            check (what the test runs)
       check.py --list     print the files checked, then the ones left out and why
       check.py --fix      reformat the checked files in place

clang-format is $CLANG_FORMAT where set, else clang-format-14 or clang-format.
Another major version is a skip, not a failure: each release lays some
constructs out differently, so its findings would be about the tool, not the
code (Debian 12's `clang-format` package is 14; .ci/run installs it).

Files whose exact bytes are the point are left out; EXCLUDED says why. The
attack, escape and class fixtures (tests/attacks, tests/escapes,
tests/submissions) and the mutants (tests/mutants) are TOML: code pasted into,
or substituted in, copies of the formatted solutions at test time. They are
not checked here; tests/mutate.py and make_class.py stop with an error when a
substitution no longer matches the solution exactly once."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("common", "labs", "solutions", "tests")
SUFFIXES = {".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp"}
VERSION = 14

# Path prefix (relative to the repository) -> why it is not formatted.
EXCLUDED = {
    "tests/gpu_runs/": "GPU evidence: the code a student wrote and ran in a recorded session "
    "(tests/gpu_runs/README.md), kept byte for byte as measured",
    "tests/similarity/": "the similarity check's fixtures: honest students' own layouts and "
    "pasted copies whose disguise (layout, names) is what the check must see through",
}


def project_files() -> list[str]:
    """The C++/CUDA files of FOLDERS: git's view (tracked, and new files not
    ignored) in a clone, every file on disk elsewhere (a release archive)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *FOLDERS],
            cwd=REPO,
            text=True,
            capture_output=True,
        )
    except FileNotFoundError:  # no git on this machine
        listed = subprocess.CompletedProcess([], 1)
    if listed.returncode == 0:
        names = [n for n in listed.stdout.splitlines() if (REPO / n).is_file()]
    else:
        names = [
            str(p.relative_to(REPO))
            for f in FOLDERS
            if (REPO / f).is_dir()
            for p in (REPO / f).rglob("*")
            if p.is_file()
        ]
    return sorted(n for n in names if Path(n).suffix in SUFFIXES)


def excluded_by(name: str) -> str | None:
    return next((p for p in EXCLUDED if name.startswith(p)), None)


def find_clang_format() -> tuple[str | None, str]:
    """(path, "") for a clang-format of VERSION, else (None, why not)."""
    chosen = os.environ.get("CLANG_FORMAT")
    candidates = [chosen] if chosen else [f"clang-format-{VERSION}", "clang-format"]
    found = [p for c in candidates if (p := shutil.which(c))]
    if not found:
        return None, (
            "clang-format is not installed (Debian/Ubuntu: apt install clang-format, "
            f"version {VERSION})"
        )
    seen = []
    for path in found:
        out = subprocess.run([path, "--version"], text=True, capture_output=True).stdout
        m = re.search(r"version (\d+)\.", out)
        if m and int(m.group(1)) == VERSION:
            return path, ""
        seen.append(f"{path} is {m.group(1) if m else 'of unknown version'}")
    return None, (
        f"the tree is formatted with clang-format {VERSION}, and "
        f"{'; '.join(seen)}, which may lay out some lines differently; "
        f"install clang-format-{VERSION} or set CLANG_FORMAT"
    )


def main(argv: list[str]) -> int:
    if argv not in ([], ["--list"], ["--fix"]):
        print(__doc__, file=sys.stderr)
        return 2
    names = project_files()
    checked = [n for n in names if excluded_by(n) is None]
    if argv == ["--list"]:
        print("\n".join(checked))
        for prefix, why in EXCLUDED.items():
            left = [n for n in names if n.startswith(prefix)]
            print(f"\nleft out, {prefix} ({len(left)} files): {why}")
            print("\n".join(f"  {n}" for n in left))
        return 0
    if not (REPO / ".clang-format").is_file():
        print(f"clang-format: no .clang-format at {REPO}", file=sys.stderr)
        return 2
    if not checked:
        print(f"clang-format: no C++/CUDA files found under {', '.join(FOLDERS)}", file=sys.stderr)
        return 2
    chosen = os.environ.get("CLANG_FORMAT")
    if chosen and shutil.which(chosen) is None:
        print(f"clang-format: CLANG_FORMAT={chosen} is not an executable", file=sys.stderr)
        return 2
    tool, why = find_clang_format()
    if tool is None:
        print(f"SKIP clang-format: {why}")
        return 77
    mode = ["-i"] if argv == ["--fix"] else ["--dry-run", "--Werror"]
    done = subprocess.run([tool, "--style=file", *mode, *checked], cwd=REPO)
    if done.returncode != 0:
        print(
            f"clang-format: files above are not formatted; `python3 {Path(__file__).relative_to(REPO)}"
            " --fix` formats them",
            file=sys.stderr,
        )
        return 1
    print(
        f"clang-format: {len(checked)} files formatted as .clang-format says "
        f"({len(names) - len(checked)} left out: see --list)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
