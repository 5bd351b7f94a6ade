#!/usr/bin/env python3
"""How many hung calls a checker makes before it runs nothing more: with
--max-timeouts=N and a runner whose every call with work never returns
(support/cpu_sum_hangs.cpp), exactly N tests fail as "did not finish", every
later one is "not run" with the reason, and nothing passes but the empty input.
A batch passes 1 to a run that shares the GPU (grader/engine/lab_grading.py,
SHARED_MAX_TIMEOUTS); the checker's own default is 2.

usage: hang_budget_check.py CHECKER RUNNER
Lab 01's checker links the same runner link as the GPU checkers, so this runs
where there is no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(checker: str, runner: str, budget: int | None) -> list[dict]:
    with tempfile.TemporaryFile() as results:
        args = [
            checker,
            "--lab=01_cpu_baseline",
            "--impl=hangs",
            f"--runner={runner}",
            "--call-timeout=0.5",
            f"--result-fd={results.fileno()}",
        ]
        if budget is not None:
            args.append(f"--max-timeouts={budget}")
        subprocess.run(
            args, pass_fds=(results.fileno(),), capture_output=True, timeout=120, check=False
        )
        results.seek(0)
        lines = results.read().decode(errors="replace").splitlines()
    return [e for e in map(json.loads, lines) if e.get("event") == "end"]


def check(checker: str, runner: str, budget: int | None, hangs: int) -> list[str]:
    ends = run(checker, runner, budget)
    failures = [" ".join(e.get("failures", [])) for e in ends if e["result"] != "passed"]
    hung = [f for f in failures if "did not finish" in f]
    not_run = [f for f in failures if "not run: the lab's code hung" in f]
    reason = "the lab's code hung" + ("" if hangs == 1 else f" {hangs} times")
    problems = []
    if len(ends) < 10:
        problems.append(f"only {len(ends)} tests reported")
    if len(hung) != hangs:
        problems.append(f"{len(hung)} calls stopped as hung, expected {hangs}")
    if len(hung) + len(not_run) != len(failures):
        problems.append("a failure is neither a hang nor 'not run' after the budget")
    if not all(reason in f for f in not_run) or not not_run:
        problems.append(f"the tests after the budget do not say '{reason}'")
    if sum(1 for e in ends if e["result"] == "passed") > 1:
        problems.append("more than the empty input passed")
    name = "default" if budget is None else f"--max-timeouts={budget}"
    if problems and failures:
        problems.append(f"first failure: {failures[0][:300]}")
    return [f"{name}: {p}" for p in problems]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("checker")
    ap.add_argument("runner")
    args = ap.parse_args()
    # Absolute: the runner starts in a folder of its own.
    checker, runner = (os.path.abspath(p) for p in (args.checker, args.runner))
    problems = check(checker, runner, 1, 1) + check(checker, runner, None, 2)
    for p in problems:
        print("FAIL", p)
    if not problems:
        print("ok: one hang with --max-timeouts=1, two by default, the rest not run")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
