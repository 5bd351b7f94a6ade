#!/usr/bin/env python3
"""How compute-sanitizer behaves when a batch runs several at once on one GPU:
what one run of each tool costs alone, and what K runs started together cost,
with the runner as the grader wraps it (each in a network namespace of its
own where the machine allows it), as this user with no namespace ("plain"),
and as before (a PID namespace alone, "shared-net").

A batch runs the sanitizer on every correct GPU lab (three tools, a few small
cases each). One at a time, at about 3.5 s a lab, it caps a batch near 1,000
student-labs an hour whatever else is fast (issue 16); this study says whether
running them side by side is safe and what it buys.

usage: sanitizer_study.py OUT [--arch sm_90] [--labs 04_sequential_addressing,...]
                          [--ks 2,4,8] [--deadline SECONDS]
Writes OUT/sanitizer-study.json after every row (a run cut by the GPU call's
time limit keeps what it measured) and prints each row as it is measured.

A row at a time, 60 s a run: a study whose rows wait for its end, each run
free to wait minutes, can pass the GPU call's limit with nothing printed.
Two runs at once hang even with ports of their own: the tool's binary names a
socket "@nv_target_process_%d" after the target's PID, which is the same in
two PID namespaces (grader/infra/isolation.py; docs/decisions.md, "Sanitizer
places")."""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from grader import labmeta  # noqa: E402
from grader.engine import lab_grading, sanitize  # noqa: E402
from grader.engine.checker_run import CheckerOptions, run_checker  # noqa: E402
from grader.infra import isolation, toolchain  # noqa: E402


def runner_isolation(variant: str) -> isolation.Contained:
    """contained: the grader's runner as it is (a network namespace of its own
    where the machine allows it); shared-net: the PID namespace alone, as before
    that (two runners have the same PIDs and share the machine's network
    namespace, where the tool names a socket after the target's PID); plain:
    this user, no namespace."""
    if variant == "contained":
        return isolation.contained()
    if variant == "plain":
        return isolation.Contained(Path(tempfile.mkdtemp()))
    iso = isolation.contained()
    iso.prefix, iso.private_network = list(isolation._unshare_prefix() or []), False
    return iso


def one_run(build: Path, lab: labmeta.Lab, tool: str, port: int | None, variant: str) -> dict:
    iso = runner_isolation(variant)
    try:
        prefix = sanitize.tool_prefix(tool)
        if port is not None:
            prefix = prefix[:-1] + [f"--port={port}", "--"]
        runner = build / "tests" / lab_grading.runner_target(lab, "solutions")
        checker = build / "tests" / lab_grading.checker_target(lab)
        started = time.monotonic()
        run = run_checker(
            checker,
            lab.id,
            iso.runner(runner, prefix),
            CheckerOptions(
                impl="solutions",
                timeout=60,
                gtest_filter=sanitize.SMALL_CASES,
                perf=False,
                call_timeout=45,
            ),
        )
        codes = [e.get("how", {}).get("code") for e in run.runner_exits]
        return {
            "tool": tool,
            "port": port,
            "seconds": round(time.monotonic() - started, 2),
            "status": str(run.status),
            "cases": len(run.cases),
            "passed": sum(1 for c in run.cases if c.status == "passed"),
            "runner_codes": codes,
            "tail": run.output_tail[-400:] if codes[-1:] != [0] else "",
        }
    finally:
        iso.cleanup()


def build_solutions(build: Path, arch: str, labs: list[labmeta.Lab]) -> bool:
    """Each lab's checker and its solution's runner, built in `build` (the
    studies' own folder, mutants off); False, with the errors, when it fails."""
    toolchain.configure(build, [f"-Dgpu_arch={arch}", "-Dmutants=disabled"])
    targets = sorted(
        {lab_grading.checker_target(lab) for lab in labs}
        | {lab_grading.runner_target(lab, "solutions") for lab in labs}
    )
    began = time.monotonic()
    built = toolchain.build(build, targets)
    print(f"built {', '.join(targets)} in {time.monotonic() - began:.0f} s", flush=True)
    if not built.ok:
        print(built.first_errors, file=sys.stderr)
    return built.ok


def all_at_once(calls: list[Callable[[], dict]]) -> list[dict]:
    """Each call in a thread of its own, all started together; their results in order."""
    results: list[dict] = [{}] * len(calls)
    threads = [
        threading.Thread(target=lambda i=i, call=call: results.__setitem__(i, call()))
        for i, call in enumerate(calls)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def together(build, lab, tool, k: int, own_ports: bool, variant: str) -> dict:
    started = time.monotonic()
    results = all_at_once(
        [
            functools.partial(
                one_run, build, lab, tool, 49152 + 16 * (i + 1) if own_ports else None, variant
            )
            for i in range(k)
        ]
    )
    wall = time.monotonic() - started
    return {
        "lab": lab.id,
        "tool": tool,
        "k": k,
        "own_ports": own_ports,
        "runner": variant,
        "wall_seconds": round(wall, 2),
        "per_run_seconds": round(wall / k, 2),
        "all_clean": all(r.get("runner_codes", [None])[-1:] == [0] for r in results),
        "runs": results,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--labs", default="04_sequential_addressing,09_shuffle_vector_loads")
    ap.add_argument("--ks", default="2,4,8")
    ap.add_argument("--deadline", type=float, default=400.0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    course = labmeta.load()
    labs = [course.lab(x) for x in args.labs.split(",")]
    build = Path("/tmp/sanitizer-study-build")
    if not build_solutions(build, args.arch, labs):
        return 1
    help_text = subprocess.run(
        [shutil.which("compute-sanitizer") or "compute-sanitizer", "--help"],
        capture_output=True,
        text=True,
    ).stdout
    options = [line.strip() for line in help_text.splitlines() if "port" in line.lower()]
    print("compute-sanitizer options about ports:", *options, sep="\n  ", flush=True)
    print(
        f"{'lab':<26}{'tool':<11}{'k':>3} {'ports':<7}{'runner':<11}{'wall s':>8}{'per run':>9}"
        "  clean"
    )
    ks = list(map(int, args.ks.split(",")))
    plan = [(lab, tool, 1, False, "contained") for lab in labs for tool in sanitize.DEFAULT_TOOLS]
    plan += [(lab, "memcheck", k, False, "contained") for k in ks for lab in labs]
    plan += [
        (lab, tool, max(ks), False, "contained")
        for tool in ("racecheck", "synccheck")
        for lab in labs
    ]
    plan += [(lab, "memcheck", max(ks), False, "plain") for lab in labs[:1]]
    # Last, as it may hang until its limit: the runner as it was before.
    plan += [(lab, "memcheck", 2, False, "shared-net") for lab in labs[:1]]
    rows: list[dict] = []
    started = time.monotonic()
    for lab, tool, k, own, variant in plan:
        if time.monotonic() - started > args.deadline:
            print(
                f"deadline of {args.deadline:.0f} s reached: {len(plan) - len(rows)} row(s) not run"
            )
            break
        r = together(build, lab, tool, k, own, variant)
        rows.append(r)
        (args.out / "sanitizer-study.json").write_text(
            json.dumps({"options_with_port": options, "rows": rows}, indent=2) + "\n"
        )
        print(
            f"{r['lab']:<26}{r['tool']:<11}{r['k']:>3} {'own' if r['own_ports'] else 'same':<7}"
            f"{r['runner']:<11}"
            f"{r['wall_seconds']:>8.2f}{r['per_run_seconds']:>9.2f}  {r['all_clean']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
