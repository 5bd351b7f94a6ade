#!/usr/bin/env python3
"""meson test `python-lint`: ruff (its findings and its format) over every
Python file of the repository, and mypy over the grader (its tests left out),
with pyproject.toml's settings; exit 0 only when all pass. A skip (exit 77, with the reason) where
ruff is not installed; mypy alone is skipped, saying so, where it is not (CI
installs both from requirements.txt)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

try:
    import ruff  # noqa: F401 - only to know it is there
except ImportError:
    print("SKIP python-lint: ruff is not installed (pip install -r requirements.txt)")
    sys.exit(77)


def fails(*args: str) -> bool:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO).returncode != 0


# The findings, then the one format (`ruff format REPO` applies it).
failed = fails("ruff", "check", "--no-cache", str(REPO))
failed |= fails("ruff", "format", "--check", "--no-cache", str(REPO))
if importlib.util.find_spec("mypy") is None:
    print("SKIP mypy: mypy is not installed (pip install -r requirements.txt); ruff ran alone")
else:
    # No cache (/dev/null), as ruff: the test writes nothing into the source tree.
    failed |= fails("mypy", "grader", "--exclude", "grader/tests", "--cache-dir", "/dev/null")
sys.exit(1 if failed else 0)
