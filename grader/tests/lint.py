#!/usr/bin/env python3
"""meson test `python-lint`: ruff over every Python file of the repository,
with pyproject.toml's settings; a skip (exit 77, with the reason) where ruff is
not installed (CI installs it from requirements.txt)."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

try:
    import ruff  # noqa: F401 - only to know it is there
except ImportError:
    print("SKIP python-lint: ruff is not installed (pip install -r requirements.txt)")
    sys.exit(77)
sys.exit(subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO)],
                        cwd=REPO).returncode)
