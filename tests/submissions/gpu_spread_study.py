#!/usr/bin/env python3
"""Is a shared test run slowed by its GPU or by the machine? K runs of one
lab's untimed tests (as a batch runs them: checker and runner, LAB_GPU_WAIT=block,
each runner contained) started together, all on the first GPU or spread over
the machine's GPUs, and how long each took.

Why: on two GPUs of one host a batch's test runs took about twice as long
as the same batch's on one of the GPUs and half the cores (docs/decisions.md,
"A batch's rate is bound by the host, not its GPUs"). The slots are per GPU,
so the two GPUs' runs slowed each other down: either
something of the machine is shared (the driver, the CPU, memory), or the batch
differs. If K runs spread over two GPUs take as long each as K runs on one, the
limit is the machine's, and more GPUs cannot raise a batch's rate; if they take
as long as K/2 on one, it is the GPU's.

usage: gpu_spread_study.py OUT [--arch sm_90] [--lab 04_sequential_addressing]
                           [--ks 1,3,6,12] [--rounds 2] [--tests NAME=FILTER;...]
                           [--wraps contained,plain] [--envs ';NAME=VALUE,...']
                           [--tools none,memcheck,racecheck] [--passes 1,4]
Writes OUT/gpu-spread-study.json after every row and prints each row. Each run
is admitted as a batch admits it (admission.py: the checker makes its context
and starts its runner, then waits for GO): up_seconds is until then, and
held_seconds after, what a batch's run slot would hold (files without
up_seconds time the runner's start inside the first case)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import itertools
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grader import labmeta  # noqa: E402
from grader.commands.gpucheck import machine  # noqa: E402
from grader.engine import lab_grading, sanitize  # noqa: E402
from grader.engine.checker_passes import Pass, run_passes  # noqa: E402
from grader.engine.checker_run import CheckerOptions, run_checker  # noqa: E402
from grader.infra import gpus  # noqa: E402
from context_probe import ENVS_HELP, env_name, environments  # noqa: E402
from sanitizer_study import all_at_once, build_solutions, runner_isolation  # noqa: E402


@dataclass(frozen=True)
class Row:
    """K runs started together: where each runs, which tests, how wrapped, and
    what more is in their environment."""

    wrap: str
    tool: str
    tests_name: str
    tests: str
    variables: tuple[tuple[str, str], ...]
    placement_name: str
    placement: tuple[str, ...]
    passes: int = 1  # runners one after another in each run's one checker


def one_run(build: Path, lab: labmeta.Lab, gpu: str, row: Row) -> dict:
    iso = runner_isolation(row.wrap)  # plain: is the wrapping's cost what is shared?
    # TOOL/all: every call of each case, as before sanitize.FIRST_CALL_ONLY.
    tool, _, calls = row.tool.partition("/")
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": gpu,
        "LAB_GPU_WAIT": "block",
        **dict(row.variables),
    }
    admitted: list[float] = []

    @contextlib.contextmanager
    def slot():  # as a batch admits a run once its processes are up (admission.py)
        admitted.append(time.monotonic())
        yield

    try:
        started = time.monotonic()
        if row.passes > 1:  # no admission: up_seconds is the whole run
            runs = several_passes(build, lab, iso, env, row)
        else:
            runs = [one_checker(build, lab, iso, env, row, tool, calls, slot)]
        ended = time.monotonic()
        up = admitted[0] if admitted else ended
        cases = [c for r in runs for c in r.cases]
        return {
            "gpu": gpu,
            "seconds": round(ended - started, 2),
            "up_seconds": round(up - started, 3),
            "held_seconds": round(ended - up, 3),
            "status": ",".join(str(r.status) for r in runs),
            "passed": sum(1 for c in cases if c.status == "passed"),
            "cases": len(cases),
            "in_tests_seconds": round(sum(c.time_ms for c in cases) / 1000, 3),
            "case_ms": {
                (f"{k}:" if len(runs) > 1 else "") + c.name: c.time_ms
                for k, r in enumerate(runs)
                for c in r.cases
            },
        }
    finally:
        iso.cleanup()


def one_checker(build: Path, lab: labmeta.Lab, iso, env, row: Row, tool: str, calls: str, slot):
    """A checker and its runner, admitted as a batch admits them (`slot`)."""
    return run_checker(
        build / "tests" / lab_grading.checker_target(lab),
        lab.id,
        iso.runner(
            build / "tests" / lab_grading.runner_target(lab, "solutions"),
            sanitize.tool_prefix(tool) if tool != "none" else None,
            env=env,
        ),
        CheckerOptions(
            impl="solutions",
            timeout=120,
            gtest_filter=row.tests,
            perf=False,
            env=env,
            call_timeout=60,
            first_call_only=tool in sanitize.FIRST_CALL_ONLY and calls != "all",
        ),
        admit=slot,
    )


def several_passes(build: Path, lab: labmeta.Lab, iso, env: dict[str, str], row: Row) -> list:
    """One checker, row.passes runners of the lab's code one after another
    (checker_passes.py, as a batch runs a lab's tests and its tools): what a
    start costs that is the runner's alone, against a checker and its runner
    each (a row of one pass)."""
    runner = iso.runner(
        build / "tests" / lab_grading.runner_target(lab, "solutions"), None, env=env
    )
    return run_passes(
        build / "tests" / lab_grading.checker_target(lab),
        lab.id,
        [Pass(f"pass{i + 1}", runner) for i in range(row.passes)],
        CheckerOptions(
            timeout=120, gtest_filter=row.tests, env=env, call_timeout=60, impl="solutions"
        ),
    )


def together(build: Path, lab: labmeta.Lab, row: Row) -> list[dict]:
    return all_at_once([functools.partial(one_run, build, lab, g, row) for g in row.placement])


def slowest(runs: list[dict], most: int = 8) -> dict[str, float]:
    """The cases that took longest, each by its median over the runs: where a
    run's time inside its tests goes (the rest of its seconds is its start)."""
    names = {n for r in runs for n in r["case_ms"]}
    medians = {n: statistics.median(r["case_ms"].get(n, 0.0) for r in runs) for n in names}
    return dict(sorted(medians.items(), key=lambda kv: -kv[1])[:most])


def plan(args: argparse.Namespace, ids: list[str]) -> list[Row]:
    rows = []
    # A tool runs over the sanitizer's own cases, as a batch runs it.
    runs = [
        (tool, named)
        for tool in args.tools.split(",")
        for named in (
            args.tests.split(";") if tool == "none" else [f"small={sanitize.SMALL_CASES}"]
        )
    ]
    for wrap, (tool, named), variables, passes in itertools.product(
        args.wraps.split(","), runs, environments(args.envs), map(int, args.passes.split(","))
    ):
        if passes > 1 and tool != "none":
            continue  # a tool's passes are the batch's own rows (tests_then_tools)
        tests_name, tests = named.split("=", 1)
        for k in map(int, args.ks.split(",")):
            kept = tuple(variables.items())
            rows.append(
                Row(wrap, tool, tests_name, tests, kept, f"{k} on GPU 0", (ids[0],) * k, passes)
            )
            if len(ids) > 1 and k > 1:
                spread = tuple(ids[i % len(ids)] for i in range(k))
                name = f"{k} spread over {len(ids)} GPUs"
                rows.append(Row(wrap, tool, tests_name, tests, kept, name, spread, passes))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--lab", default="04_sequential_addressing")
    ap.add_argument("--ks", default="1,3,6,12")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--tests",
        default=f"untimed={lab_grading.UNTIMED_TESTS}",
        help="NAME=GTEST_FILTER;...: which tests each row runs (default: the untimed ones); "
        "e.g. start=*EmptyInputGivesIdentity (little more than the processes' start) and "
        "small=-*Bandwidth*:*ZHuge* (every case but the timed and the 2^32-element one)",
    )
    ap.add_argument(
        "--wraps",
        default="contained",
        help="contained (the runner as a batch wraps it), plain (no namespace), or both",
    )
    ap.add_argument("--envs", default="", help=ENVS_HELP)
    ap.add_argument(
        "--passes",
        default="1",
        help="N,...: each run one checker with N runners one after another (the lab's tests "
        "each time; tool none only): with 1 beside it, what a runner's start costs alone",
    )
    ap.add_argument(
        "--tools",
        default="none",
        help="none (the tests as they are), or compute-sanitizer tools (memcheck,racecheck,...) "
        "wrapping the runner over the sanitizer's small cases, as a batch runs them; "
        "TOOL/all: with every call of each case (sanitize.FIRST_CALL_ONLY)",
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    lab = labmeta.load().lab(args.lab)
    ids = gpus.visible_gpus()
    if not ids:
        print("no GPU visible: this study needs one, two or more to compare", file=sys.stderr)
        return 1
    build = Path("/tmp/gpu-spread-study-build")
    if not build_solutions(build, args.arch, [lab]):
        return 1
    rows: list[dict] = []
    # GPUs, driver, commit, date: what the figures are of ("host": "machine" names a gpucheck file)
    facts = dataclasses.asdict(machine())
    print(
        f"{'wrap':<10}{'tool':<10}{'tests':<9}{'environment':<32}{'placement':<24}{'runs':>5}"
        f"{'median s':>10}{'max s':>8}{'wall s':>8}  all passed"
    )
    for spec in plan(args, ids):
        for round_ in range(args.rounds):
            started = time.monotonic()
            runs = together(build, lab, spec)
            wall = time.monotonic() - started
            seconds = [r["seconds"] for r in runs]
            row = {
                "wrap": spec.wrap,
                "tool": spec.tool,
                "tests": spec.tests_name,
                "gtest_filter": spec.tests,
                "environment": dict(spec.variables),
                "placement": spec.placement_name,
                "passes": spec.passes,
                "round": round_ + 1,
                "runs": len(runs),
                "median_seconds": round(statistics.median(seconds), 2),
                "max_seconds": max(seconds),
                "wall_seconds": round(wall, 2),
                "all_passed": all(r["passed"] == r["cases"] > 0 for r in runs),
                "median_held_seconds": round(statistics.median(r["held_seconds"] for r in runs), 3),
                "median_in_tests_seconds": round(
                    statistics.median(r["in_tests_seconds"] for r in runs), 3
                ),
                "slowest_cases_ms": slowest(runs),
                "each": runs,
            }
            rows.append(row)
            (args.out / "gpu-spread-study.json").write_text(
                json.dumps({"host": facts, "lab": lab.id, "gpus": ids, "rows": rows}, indent=2)
                + "\n"
            )
            print(
                f"{spec.wrap:<10}{spec.tool:<10}{spec.tests_name:<9}{env_name(dict(spec.variables)):<32}"
                f"{spec.placement_name + (f' x{spec.passes} passes' if spec.passes > 1 else ''):<24}"
                f"{len(runs):>5}"
                f"{row['median_seconds']:>10.2f}{row['max_seconds']:>8.2f}"
                f"{row['wall_seconds']:>8.2f}  {row['all_passed']}",
                flush=True,
            )
            print(
                f"    held {row['median_held_seconds']:.2f} s, in tests "
                f"{row['median_in_tests_seconds']:.2f} s; slowest: "
                + ", ".join(f"{n} {ms:.0f} ms" for n, ms in row["slowest_cases_ms"].items()),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
