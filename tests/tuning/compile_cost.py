#!/usr/bin/env python3
"""What a student-lab's two compiles cost the CPU: the build of its runner
(the lab file compiled and linked, as a batch's worker builds it in its tree)
and the linked policy check's compile (grader/engine/policy/symbols.py: host code at
-O0, PTX for two architectures), each in core-seconds (user and system time of
the compiler's processes) and wall seconds. No GPU needed.

Why: on one GPU with 16 cores the 11-lab class keeps the cores about 84% busy
while its GPU is 44% used, about 16 core-seconds a lab (tests/gpu_runs/h100x2/
throughput-3b894b2-*); the compiles are the part of that a machine without a
GPU can measure.

Measured on a 2-core machine without a GPU (AMD EPYC, nvcc 13.0) at 6efde9b,
the solutions, medians of 2 rounds (tests/tuning/compile-cost-6efde9b.json):
1.3-1.5 core-seconds a build and 1.5-1.7 a policy compile for labs 02-10,
3.1 and 3.9 for lab 11, 0.4 and 0.4 for lab 01; the 11 labs 15.7 and 18.3,
about 3.1 core-seconds a lab in all: a fifth of the 16-17 a lab costs the GPU
machine. The other four fifths are the runs (the checkers, the runners,
compute-sanitizer) and the grader: throughput.py --cpu-by-command's to say.

usage: compile_cost.py BUILD_DIR [LAB ...] [--impl solutions] [--rounds 2]
       BUILD_DIR: a configured tree of this repository (meson setup), whose
       runner targets (LAB-runner-IMPL) this rebuilds after touching the file.
Prints a row per lab (the median of the rounds) and writes JSON to stdout's
last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from grader import labmeta  # noqa: E402
from grader.engine.policy import policy, symbols  # noqa: E402
from grader.engine.lab_grading import runner_target  # noqa: E402


def children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def timed(fn) -> tuple[float, float]:
    """(core-seconds of the child processes fn waited for, wall seconds)."""
    cpu, wall = children_cpu(), time.monotonic()
    fn()
    return children_cpu() - cpu, time.monotonic() - wall


def build(tree: Path, lab: labmeta.Lab, impl: str) -> None:
    (REPO / impl / lab.id / lab.files[0]).touch()
    subprocess.run(
        ["ninja", "-C", str(tree), f"tests/{runner_target(lab, impl)}"],
        check=True,
        capture_output=True,
    )


def policy_compile(lab: labmeta.Lab, impl: str, work: Path) -> None:
    categories = policy.categories_for(lab)
    for name in lab.files:
        compiled = symbols.compile_facts(
            REPO / impl / lab.id / name,
            include_dirs=[REPO / "common"],
            rdc=lab.rdc,
            work=work,
            timeout=300,
            instructions=policy.instruction_patterns(categories),
        )
        if not compiled.ok:
            raise SystemExit(f"{lab.id}/{name}: the policy compile failed\n{compiled.log[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", type=Path)
    ap.add_argument("labs", nargs="*")
    ap.add_argument("--impl", default="solutions")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    labs = [
        l
        for l in labmeta.load().labs
        if not args.labs or l.id in args.labs or l.id[:2] in args.labs
    ]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for lab in labs:
            if lab.id.startswith("12"):
                continue  # two GPUs and NCCL: not in the class
            b = [timed(lambda: build(args.tree, lab, args.impl)) for _ in range(args.rounds)]
            p = [
                timed(lambda: policy_compile(lab, args.impl, Path(work)))
                for _ in range(args.rounds)
            ]
            row = {
                "lab": lab.id,
                "build_core_s": round(statistics.median(c for c, _ in b), 2),
                "build_wall_s": round(statistics.median(w for _, w in b), 2),
                "policy_core_s": round(statistics.median(c for c, _ in p), 2),
                "policy_wall_s": round(statistics.median(w for _, w in p), 2),
            }
            rows.append(row)
            print(
                f"{lab.id:28} build {row['build_core_s']:5.2f} core-s ({row['build_wall_s']:.2f} s)"
                f"   policy {row['policy_core_s']:5.2f} core-s ({row['policy_wall_s']:.2f} s)",
                flush=True,
            )
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    cpu = next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        "?",
    )
    machine = {"cores": os.cpu_count(), "cpu": cpu, "nvcc": nvcc.strip().splitlines()[-1]}
    print(json.dumps({"machine": machine, "impl": args.impl, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
