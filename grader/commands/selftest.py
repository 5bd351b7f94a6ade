"""`selftest`: the repository's own tests, as the README and CI run them.

Builds every target (every .cu of labs, solutions, tests), then runs the meson
suite `selftest`: the solutions pass, untouched skeletons fail with "not
implemented", each mutant fails with its hint, CUB passes the same tests, and
the grader's pytest suite passes. GPU tests skip (exit 77) on a machine
without a GPU, and the list of skipped tests is printed. Ends with the line
"N passed, N failed" (skipped tests count in neither).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..infra import toolchain


def summarize(testlog: Path) -> dict[str, list[str]]:
    """meson's testlog.json -> test names by outcome, and the reasons for skips."""
    by: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": [], "skip_reasons": []}
    for line in testlog.read_text().splitlines():
        t = json.loads(line)
        outcome = {"OK": "passed", "EXPECTEDFAIL": "passed", "SKIP": "skipped"}.get(
            t["result"], "failed"
        )
        by[outcome].append(t["name"].split(":")[-1])  # drop "suites - project:"
        if outcome == "skipped":
            reason = next(
                (
                    l.split(": ", 1)[-1]
                    for l in (t.get("stdout") or "").splitlines()
                    if l.startswith("SKIP")
                ),
                "",
            )
            if reason and reason not in by["skip_reasons"]:
                by["skip_reasons"].append(reason)
    return by


def run(build_dir: Path, options: list[str]) -> int:
    meson = toolchain.ensure_tools(need_pytest=True)
    toolchain.configure(build_dir, [f"-D{o}" for o in options])
    print(f"[selftest] building everything in {build_dir} ...", flush=True)
    built = toolchain.build(build_dir)
    if not built.ok:
        print(built.log[-6000:])
        print("build failed\n0 passed, 1 failed")
        return 1
    proc = subprocess.run(
        meson
        + ["test", "-C", str(build_dir), "--suite", "selftest", "--print-errorlogs", "--no-rebuild"]
    )
    testlog = build_dir / "meson-logs" / "testlog.json"
    if not testlog.exists():
        print("meson test wrote no log\n0 passed, 1 failed")
        return 1
    by = summarize(testlog)
    if by["skipped"]:
        print(f"\nskipped here: {', '.join(sorted(by['skipped']))}")
        for reason in by["skip_reasons"]:
            print(f"  because: {reason}")
    if by["failed"]:
        print("failed: " + ", ".join(sorted(by["failed"])))
    print(f"{len(by['passed'])} passed, {len(by['failed'])} failed")
    return 1 if by["failed"] or proc.returncode not in (0,) else 0
