#!/usr/bin/env python3
"""Does a timed run measure the lab, or the machine's other work? Each lab's
timed tests on the reference solution (one at a time, as a batch's timed turn
runs them, with a timed run's environment), with the CPU quiet, with every
core busy at the timed run's own priority, and with every core busy in the
background as a batch's builds, policy checks and untimed tests run
(proc.background_command).

Why: a batch's timed turn has the GPU to itself, not the CPU; the CPU paces a
timed run (the checker's requests, the runner's launches, the read-back).
On an H100 with 32 busy loops beside it, labs 06, 07, 09 and 11 fell below
their thresholds, and in the eleven-lab class a correct lab 08 lost points
(docs/decisions.md, "Untimed work runs at a lower priority"). Each busy loop runs in a session of its
own, as each program a batch starts does (proc.run), so that the kernel weighs
them as it weighs a batch's work, autogroups included.

usage: cpu_load_study.py OUT [--arch sm_90] [--rounds 2] [--load N (default: twice the cores)]
                             [--labs 01,06,...] [--timeout 120]
First a wake probe under each condition (PROBE: no GPU needed), then the labs.
Without a GPU only the CPU lab (01) is timed. Writes OUT/cpu-load-study.json
after every lab and prints, last, each lab's median fraction per condition."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grader import labmeta  # noqa: E402
from grader.engine.checker_run import checker_env  # noqa: E402
from grader.infra import gpus, proc  # noqa: E402
from sanitizer_study import build_solutions  # noqa: E402
from timed_connections_study import Turn, one_part  # noqa: E402

CONDITIONS = ("quiet", "equal", "background")
SPIN = [sys.executable, "-c", "while True: pass"]

# A program that, like a timed run, sleeps and wakes (every millisecond, for
# two seconds) and wants a core at once each time: how late its wakes come
# tells which of proc.background_command's two knobs this machine's kernel
# heeds (a GPU is not needed).
PROBE = """
import json, time
late = []
end = time.monotonic() + 2
while time.monotonic() < end:
    t = time.monotonic()
    time.sleep(0.001)
    late.append(time.monotonic() - t - 0.001)
    sum(range(2000))
late.sort()
print(json.dumps({"wakes": len(late), "p50_ms": late[len(late) // 2] * 1e3,
                  "p99_ms": late[int(len(late) * 0.99)] * 1e3}))
"""


def wake_probe() -> dict:
    """PROBE in a session of its own, as every program a batch starts."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, start_new_session=True
    )
    return json.loads(done.stdout)


@contextlib.contextmanager
def load(condition: str, count: int):
    """`count` busy loops, each in a session of its own: none (quiet), at
    this process's priority (equal), or as a batch's background work."""
    args = proc.background_command(SPIN) if condition == "background" else SPIN
    loops = (
        []
        if condition == "quiet"
        else [subprocess.Popen(args, start_new_session=True) for _ in range(count)]
    )
    try:
        time.sleep(0.5 if loops else 0)  # every loop running before the clock starts
        yield
    finally:
        for p in loops:
            p.kill()
        for p in loops:
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--rounds", type=int, default=2)
    # Twice the cores: a batch's builds and tests ask for more cores than there
    # are; with one busy loop a core, a program that wakes still finds one soon
    # (this study's wake probe on 2 cores: p99 0.08 ms late with 2 loops at its
    # own priority, 2.3 ms with 4, 0.09 ms with 4 in the background).
    ap.add_argument("--load", type=int, default=2 * len(os.sched_getaffinity(0)))
    ap.add_argument("--labs", default="", help="comma-separated ids or prefixes")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    have_gpu = bool(gpus.visible_gpus())
    wanted = [w for w in args.labs.split(",") if w]
    labs = [
        lab
        for lab in labmeta.load().labs
        if not lab.spans_gpus
        and (have_gpu or not lab.needs_gpu)
        and (not wanted or any(lab.id.startswith(w) for w in wanted))
    ]
    if not labs:
        print("no lab to time here", file=sys.stderr)
        return 1
    build = Path("/tmp/cpu-load-build")
    if not build_solutions(build, args.arch, labs):
        return 1
    print(f"{args.load} busy loops; GPUs: {gpus.visible_gpus() or 'none'}", flush=True)
    probes = {}
    for condition in CONDITIONS:
        with load(condition, args.load):
            probes[condition] = wake_probe()
        print(f"wake probe, {condition}: {probes[condition]}", flush=True)
    rows: list[dict] = []
    for round_ in range(args.rounds):
        # Turn the conditions' order each round, so that none always comes first.
        order = CONDITIONS[round_ % 3 :] + CONDITIONS[: round_ % 3]
        for lab in labs:
            env = checker_env(None, True, lab.id)
            for condition in order:
                with load(condition, args.load):
                    part = one_part(build, lab, env, Turn(1), args.timeout)
                rows.append({"round": round_ + 1, "condition": condition, **part})
                print(
                    f"round {round_ + 1} {lab.id:<28} {condition:<10} "
                    f"{part['passed']}/{part['cases']} passed, fractions {part['fractions']}",
                    flush=True,
                )
                (args.out / "cpu-load-study.json").write_text(
                    json.dumps(
                        {
                            "gpus": gpus.visible_gpus(),
                            "load": args.load,
                            "wake_probe": probes,
                            "rows": rows,
                        },
                        indent=2,
                    )
                    + "\n"
                )
    print(f"\n{'lab':<28}" + "".join(f"{c:>12}" for c in CONDITIONS))
    for lab in labs:
        cells = []
        for c in CONDITIONS:
            values = [
                f
                for r in rows
                if r["lab"] == lab.id and r["condition"] == c
                for f in r["fractions"]
            ]
            cells.append(f"{statistics.median(values):>12.3f}" if values else f"{'-':>12}")
        print(f"{lab.id:<28}" + "".join(cells))
    failed = [r for r in rows if r["passed"] != r["cases"] or not r["cases"]]
    print(f"runs with a test not passed: {len(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
