"""`release DEST`: the repository students receive.

Everything but the reference solutions and the hidden tests (mutants, the
tuning sweeps, the class of buggy submissions, the sandbox escapes, the
grader's own tests, CI), with the course GPU's
thresholds as they stand in grader/labs.toml. Then grading is checked in the
copy itself: lab 01 (CPU) is graded and must fail with "not implemented"."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from . import tools

LEFT_OUT = ("solutions", "tests/mutants", "tests/tuning", "tests/submissions", "tests/escapes",
            "grader/tests", ".ci", ".git")


def _ignore(dirpath: str, names: list[str]) -> set[str]:
    rel = Path(dirpath).resolve().relative_to(tools.REPO)
    skip = {n for n in names if (n.startswith("build") and Path(dirpath, n).is_dir())
            or n in ("__pycache__", ".pytest_cache")}
    skip |= {n for n in names if (rel / n).as_posix() in LEFT_OUT}
    return skip


def make(dest: Path) -> None:
    if dest.exists() and any(dest.iterdir()):
        raise tools.SetupError(f"{dest} exists and is not empty")
    shutil.copytree(tools.REPO, dest, ignore=_ignore, dirs_exist_ok=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(dest)], check=False)
        subprocess.run(["git", "-C", str(dest), "add", "-A"], check=False)
        subprocess.run(["git", "-C", str(dest), "-c", "user.name=course", "-c",
                        "user.email=course@example.invalid", "commit", "-qm",
                        f"Student release of {tools.git_commit()}"], check=False)


def check(dest: Path) -> tuple[bool, str]:
    """Grades lab 01 in the release: it must build, run, and say 'not implemented'."""
    report = dest / "build" / "grade-report.json"
    proc = subprocess.run([sys.executable, "-m", "grader", "grade", "01", "--no-perf"],
                          cwd=dest, capture_output=True, text=True, timeout=1800)
    if not report.exists():
        return False, f"no report; grade printed:\n{(proc.stdout + proc.stderr)[-3000:]}"
    lab = json.loads(report.read_text())["labs"][0]
    ok = (proc.returncode == 1 and lab["status"] == "graded" and lab["tests_failed"] > 0
          and (lab.get("first_failure") or {}).get("hint") == "not_implemented")
    return ok, f"lab 01 in the release: {lab['tests_passed']} passed, {lab['tests_failed']} " \
               f"failed, first failure hint {(lab.get('first_failure') or {}).get('hint')}"


def run(dest: Path, do_check: bool) -> int:
    make(dest)
    left = [p for p in LEFT_OUT if (dest / p).exists() and p != ".git"]
    if left:
        print(f"release: {', '.join(left)} should not be there")
        return 1
    print(f"release: wrote {dest} (left out: {', '.join(LEFT_OUT[:-1])})")
    if not do_check:
        return 0
    ok, message = check(dest)
    print(("release check OK: " if ok else "release check FAILED: ") + message)
    return 0 if ok else 1
