#!/usr/bin/env python3
"""compute-sanitizer in a batch, on a GPU: a racy lab loses its points there.

Two students, graded by `grader batch` on lab 08 with two workers on one GPU:
`racy` (the solution with the mutant missing_syncthreads of
tests/mutants/08_max_reduction.toml, whose outputs are nearly always right:
racecheck catches it) and `clean` (the solution). In a batch the tools run
in the tests' checker (grader/engine/shared_gpu.py's tests_then_tools), a path
`grade` does not take. Expected: racy 0 points with racecheck's findings (or,
should the race show in an output this time, a failed test: said, still 0);
clean every point, every tool clean.

usage: racy_batch.py OUT [--arch ARCH]     writes OUT/racy-batch.json; exit 0 when as expected"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))
import mutate  # noqa: E402

LAB = "08_max_reduction"
MUTANTS = REPO / "tests" / "mutants" / f"{LAB}.toml"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="auto")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="racy-batch-"))
    for who in ("racy", "clean"):
        shutil.copytree(REPO / "solutions", work / who / "labs")
    racy = work / "racy" / "labs" / LAB / "reduce.cu"
    mutate.apply(MUTANTS, "missing_syncthreads", racy, racy, header=False)
    out = work / "out"
    cmd = [sys.executable, "-m", "grader", "batch", str(work / "racy"), str(work / "clean")]
    cmd += ["--out", str(out), "--arch", args.arch, "--lab", LAB, "--jobs-per-gpu", "2"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=None)
    labs = {}
    for who in ("racy", "clean"):
        path = out / "students" / who / "result.json"
        res = json.loads(path.read_text()) if path.exists() else {"labs": []}
        labs[who] = next((lab for lab in res["labs"] if lab["lab"] == LAB), None)
    problems = []
    r, c = labs["racy"], labs["clean"]
    if r is None or r["points"] != 0:
        problems.append(f"racy: {r and r['points']} points, expected 0")
    elif (r.get("sanitizer") or {}).get("racecheck") != "findings" and not r.get("first_failure"):
        problems.append(f"racy: 0 points but neither racecheck's findings nor a failed test: {r}")
    if c is None or c["points"] != c["max_points"] or set(c["sanitizer"].values()) != {"clean"}:
        problems.append(
            f"clean: {c and (c['points'], c['sanitizer'])}, expected every point, clean"
        )
    report = {
        "batch_exit": done.returncode,
        "racy": r and {k: r.get(k) for k in ("points", "sanitizer", "first_failure", "hints")},
        "clean": c and {k: c.get(k) for k in ("points", "max_points", "sanitizer")},
        "problems": problems,
        "batch_tail": done.stdout[-3000:] + done.stderr[-2000:],
    }
    (args.out / "racy-batch.json").write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if k != "batch_tail"}, indent=2))
    print("racy batch:", "OK" if not problems else "; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
