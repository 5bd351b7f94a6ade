#!/usr/bin/env python3
"""Would one queue a context change what a timed run measures? One student's
timed parts, every GPU lab's bandwidth tests on the reference solutions, started
at once and then timed alone one after another, as a batch's timed turn runs
them (gate.Gate.timed_turn), with CUDA's eight queues a context (what every
timed run has today, checker_run.checker_env) and with one, in turn.

Why: the driver makes one context at a time for the whole machine, and a
context with one queue takes about a third of the time (docs/decisions.md,
"One queue per context for the runs that share a GPU"). An 11-lab student's
turn starts 20 processes, seconds with the rest of the batch waiting. The
shared runs have one queue; the timed runs may get it only if no lab's
fraction of the copy moves (docs/decisions.md, "One queue per context for
timed runs").

usage: timed_connections_study.py OUT [--arch sm_90] [--rounds 3] [--connections 8,1]
                                  [--labs 02,...] [--timeout 120]
Writes OUT/timed-connections-study.json after every turn and prints, last, a
table of each lab's median fraction per setting and the turns' starts."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grader import labmeta  # noqa: E402
from grader.engine import lab_grading, scoring  # noqa: E402
from grader.engine.checker_run import (  # noqa: E402
    CONNECTIONS,
    CheckerOptions,
    Ending,
    checker_args,
    judge,
    launch,
    list_tests,
)
from grader.infra import gpus  # noqa: E402
from sanitizer_study import all_at_once, build_solutions, runner_isolation  # noqa: E402

DEFAULT = 8  # CUDA's own: no variable set


def environment(connections: int) -> dict[str, str]:
    """A timed run's environment (checker_env with perf on), but for the queues."""
    env = {k: v for k, v in os.environ.items() if k not in (CONNECTIONS, "LAB_SKIP_PERF")}
    if connections != DEFAULT:
        env[CONNECTIONS] = str(connections)
    return env


class Turn:
    """A timed turn's admission without the gate: every part waits until all
    are up (or ended), then they take the GPU one at a time."""

    def __init__(self, parts: int) -> None:
        self.started = time.monotonic()
        self.up: dict[str, float] = {}  # part -> seconds from the turn's start until up or ended
        self._parts, self._cond, self._one = parts, threading.Condition(), threading.Lock()

    def settle(self, part: str) -> None:
        with self._cond:
            self.up.setdefault(part, time.monotonic() - self.started)
            self._cond.notify_all()

    @contextlib.contextmanager
    def admit(self, part: str):
        self.settle(part)
        with self._cond:
            self._cond.wait_for(lambda: len(self.up) >= self._parts, timeout=60)
        with self._one:
            yield


def one_part(build: Path, lab: labmeta.Lab, env: dict, turn: Turn, timeout: float) -> dict:
    iso = runner_isolation("contained")
    checker = build / "tests" / lab_grading.checker_target(lab)
    runner = iso.runner(
        build / "tests" / lab_grading.runner_target(lab, "solutions"), None, env=env
    )
    admitted = []

    @contextlib.contextmanager
    def admit():
        with turn.admit(lab.id):
            admitted.append(time.monotonic())
            yield

    try:
        args = checker_args(
            checker,
            lab.id,
            runner,
            CheckerOptions(impl="solutions", gtest_filter=lab_grading.TIMED_TESTS),
        )
        done, text = launch(args, timeout=timeout, env=env, log_limit=16 << 20, admit=admit)
        ended = time.monotonic()
        expected = list_tests(checker, lab_grading.TIMED_TESTS)
        run = judge(
            Ending.of(done),
            text,
            expected,
            checker=checker,
            seed=None,
            gpu_expected=True,
            timeout=timeout,
        )
        figures = [f for c in run.cases for f in scoring.bandwidth_figures(c) if f["graded"]]
        return {
            "lab": lab.id,
            "status": str(run.status),
            "passed": sum(1 for c in run.cases if c.status == "passed"),
            "cases": len(run.cases),
            "fractions": [f["fraction"] for f in figures],
            "gbps": [f["gbps"] for f in figures],
            "held_seconds": round(ended - admitted[0], 3) if admitted else None,
        }
    finally:
        turn.settle(lab.id)  # ended, up or not
        iso.cleanup()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", default="8,1")
    ap.add_argument(
        "--labs",
        default="",
        help="comma-separated ids or prefixes (default: every GPU lab one GPU grades)",
    )
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not gpus.visible_gpus():
        print("no GPU visible: this study times the labs on one", file=sys.stderr)
        return 1
    course = labmeta.load()
    wanted = [w for w in args.labs.split(",") if w]
    labs = [
        lab
        for lab in course.labs
        if lab.needs_gpu
        and not lab.spans_gpus
        and (not wanted or any(lab.id.startswith(w) for w in wanted))
    ]
    build = Path("/tmp/timed-connections-build")
    if not build_solutions(build, args.arch, labs):
        return 1
    settings = [int(c) for c in args.connections.split(",")]
    turns: list[dict] = []
    for round_ in range(args.rounds):
        # Alternate the order, so that neither setting always runs first.
        for connections in settings if round_ % 2 == 0 else settings[::-1]:
            env = environment(connections)
            turn = Turn(len(labs))
            parts = all_at_once(
                [lambda lab=lab: one_part(build, lab, env, turn, args.timeout) for lab in labs]
            )
            row = {
                "round": round_ + 1,
                "connections": connections,
                "all_up_seconds": round(max(turn.up.values()), 3),
                "wall_seconds": round(time.monotonic() - turn.started, 3),
                "parts": parts,
            }
            turns.append(row)
            (args.out / "timed-connections-study.json").write_text(
                json.dumps({"gpus": gpus.visible_gpus(), "turns": turns}, indent=2) + "\n"
            )
            ok = all(p["passed"] == p["cases"] > 0 for p in parts)
            print(
                f"round {round_ + 1} connections {connections}: up {row['all_up_seconds']:.2f} s, "
                f"turn {row['wall_seconds']:.2f} s, every test passed: {ok}",
                flush=True,
            )
    print(
        f"\n{'lab':<28}"
        + "".join(f"{'fraction @' + str(c):>16}" for c in settings)
        + f"{'ratio':>8}"
    )
    for lab in labs:
        medians = []
        for c in settings:
            values = [
                f
                for t in turns
                if t["connections"] == c
                for p in t["parts"]
                if p["lab"] == lab.id
                for f in p["fractions"]
                if f is not None
            ]
            medians.append(statistics.median(values) if values else float("nan"))
        print(
            f"{lab.id:<28}"
            + "".join(f"{m:>16.3f}" for m in medians)
            + f"{medians[-1] / medians[0]:>8.3f}"
        )
    for c in settings:
        ups = [t["all_up_seconds"] for t in turns if t["connections"] == c]
        walls = [t["wall_seconds"] for t in turns if t["connections"] == c]
        print(
            f"connections {c}: parts all up in {statistics.median(ups):.2f} s (median), "
            f"the turn {statistics.median(walls):.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
