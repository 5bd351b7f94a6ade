#!/usr/bin/env python3
"""A checker kept across runs (checker --serve, tests/support/checker_serve.hpp,
grader/engine/sharing/checker_service.py), the real one: lab 01's checker serves runs
of the solution and of the skeleton one after another, and each run's results
are those a checker of its own gives with the same seed (no run's filter,
results, failures or budgets reach the next), through admission pipes too, and
so are timed runs lent a checker by a pool (batch --keep-timed-checkers). A
run that outlives its time limit kills the kept checker, and the next run gets
a new one. A process the lab's code leaves behind is gone when its run ends.

usage: serve_check.py CHECKER SOLUTION_RUNNER SKELETON_RUNNER --lab LAB [--hang RUNNER]

With --hang (a runner whose calls never return) it checks the time limit too.
A GPU lab's checker exits 77 (skip) where there is no GPU, and so does this.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grader.engine.sharing import checker_service  # noqa: E402
from grader.engine.checker_run import CheckerOptions, list_tests, run_checker  # noqa: E402
from grader.engine.lab_grading import TIMED_TESTS  # noqa: E402
from grader.infra.runner import RunnerSpec  # noqa: E402
from grader.status import RunStatus  # noqa: E402

FILTER = "*EdgeSizes*"
SKIP_EXIT = 77
LAB = ""  # --lab


def untimed(checker: Path, runner: Path, **kw):
    """An untimed run (perf=False: what a kept checker serves) with seed 7."""
    kw.setdefault("seed", 7)
    spec = RunnerSpec(runner, kw.pop("prefix", []))
    admit = kw.pop("admit", None)
    return run_checker(checker, LAB, spec, CheckerOptions(perf=False, **kw), admit=admit)


def outcome(run) -> tuple:
    return (
        run.status,
        run.exit_code,
        run.properties.get("seed"),
        sorted((c.name, c.status, tuple(c.failures)) for c in run.cases),
    )


def served_pid() -> int | None:
    return next((s.pid for s in checker_service.serving_now()), None)


def same_as_own(checker: Path, solution: Path, skeleton: Path) -> list[str]:
    """Runs through a kept checker give what checkers of their own give."""
    plan = [
        ("solution, filtered", solution, {"gtest_filter": FILTER}),
        ("skeleton, filtered", skeleton, {"gtest_filter": FILTER}),
        ("solution, every test", solution, {}),
        ("solution, admitted", solution, {"gtest_filter": FILTER, "admit": contextlib.nullcontext}),
        ("skeleton, first calls", skeleton, {"first_call_only": True}),
    ]
    own = [outcome(untimed(checker, runner, **kw)) for _, runner, kw in plan]
    if own[0][0] == RunStatus.SKIPPED:
        print("SKIP: the checker found no GPU")
        sys.exit(SKIP_EXIT)
    problems, pids = [], set()
    with checker_service.kept():
        for (name, runner, kw), alone in zip(plan, own):
            got = outcome(untimed(checker, runner, **kw))
            pids.add(served_pid())
            if got != alone:
                problems.append(f"{name}: kept {got[:3]} {len(got[3])} cases, own {alone[:3]}")
            print(f"{name}: {got[0]}, {len(got[3])} cases, as its own checker's: {got == alone}")
    if len(pids) != 1 or None in pids:
        problems.append(f"the runs were served by processes {pids}, not one")
    everything = len(list_tests(checker))
    if len(own[2][3]) != everything:
        problems.append(f"the unfiltered run had {len(own[2][3])} results of {everything} tests")
    if own[1][0] != RunStatus.COMPLETED or all(c[1] == "passed" for c in own[1][3]):
        problems.append("the skeleton's run did not fail: the comparison shows nothing")
    return problems


def timed_and_borrowed(checker: Path, solution: Path, skeleton: Path) -> list[str]:
    """Timed runs through a pool's kept checkers (batch --keep-timed-checkers)
    end as a checker of their own ends them: the same tests, each passed or
    failed alike (the figures they measure differ from run to run)."""

    def timed(runner: Path):
        options = CheckerOptions(perf=True, seed=7, gtest_filter=TIMED_TESTS)
        return run_checker(checker, LAB, RunnerSpec(runner), options)

    def shape(run) -> tuple:
        return run.status, run.exit_code, sorted((c.name, c.status) for c in run.cases)

    runners = (solution, skeleton, solution)
    own = [shape(timed(r)) for r in runners]
    pool = checker_service.Pool()
    with checker_service.borrowing(pool):
        lent = [shape(timed(r)) for r in runners]
    pool.close()
    print(f"timed, borrowed: {[r[0] for r in lent]}, as their own checkers': {lent == own}")
    problems = [] if lent == own else [f"timed runs through a pool: {lent} against {own}"]
    if not own[0][2] or own[0][2] == own[1][2]:
        problems.append(f"the timed runs show nothing: {own}")
    return problems


def timed_out_then_fresh(checker: Path, solution: Path, hang: Path) -> list[str]:
    """A run past its limit kills the kept checker; the next run has a new one."""
    with checker_service.kept():
        untimed(checker, solution, gtest_filter=FILTER)
        first = served_pid()
        stuck = untimed(checker, hang, gtest_filter=FILTER, timeout=3, call_timeout=30)
        again = untimed(checker, solution, gtest_filter=FILTER)
        second = served_pid()
    print(f"past its limit: {stuck.status}; then {again.status} in a new checker {second}")
    problems = []
    if stuck.status != RunStatus.TIMED_OUT:
        problems.append(f"a run past its limit ended {stuck.status}: {stuck.reason}")
    if first is None or second is None or first == second:
        problems.append(f"the run after a kill was served by {second}, the one before by {first}")
    with contextlib.suppress(ProcessLookupError):
        if first is not None:
            os.kill(first, 0)
            problems.append(f"the killed checker {first} is still there")
    if again.status != RunStatus.COMPLETED or not all(c.ok for c in again.cases):
        problems.append(f"the run after it: {again.status} {again.reason}")
    return problems


def nothing_left_behind(checker: Path, solution: Path) -> list[str]:
    """A process the runner leaves behind (here a sleep started by its wrapper)
    is killed when its run ends, and the kept checker serves on."""
    with tempfile.TemporaryDirectory() as tmp:
        pid_file = Path(tmp) / "left"
        prefix = ["/bin/sh", "-c", f'sleep 600 & echo $! > {pid_file}; exec "$@"', "sh"]
        with checker_service.kept():
            left = untimed(checker, solution, gtest_filter=FILTER, prefix=prefix)
            pid = int(pid_file.read_text())
            time.sleep(0.2)
            alive = Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)
            after = untimed(checker, solution, gtest_filter=FILTER)
    print(f"left behind: run {left.status}, its sleep alive after it: {alive}; next {after.status}")
    problems = []
    if alive:
        problems.append(f"the process {pid} the runner left behind outlived its run")
    if left.status != RunStatus.COMPLETED or after.status != RunStatus.COMPLETED:
        problems.append(f"runs ended {left.status} and {after.status}")
    return problems


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "Z"
    return stat[stat.rfind(")") + 2 :].split()[0]


def main() -> int:
    global LAB
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("checker", "solution", "skeleton"):
        ap.add_argument(name, type=Path)
    ap.add_argument("--lab", required=True)
    ap.add_argument("--hang", type=Path)
    a = ap.parse_args()
    LAB = a.lab
    # The runner starts in a folder of its own: meson's relative paths would not reach it.
    checker, solution, skeleton = (p.resolve() for p in (a.checker, a.solution, a.skeleton))
    problems = same_as_own(checker, solution, skeleton)
    problems += timed_and_borrowed(checker, solution, skeleton)
    if a.hang is not None:
        problems += timed_out_then_fresh(checker, solution, a.hang.resolve())
    problems += nothing_left_behind(checker, solution)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
