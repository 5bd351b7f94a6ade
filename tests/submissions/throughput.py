#!/usr/bin/env python3
"""How many student-labs an hour `batch` grades: the class of class.toml (ten
students, correct and buggy, one endless loop among them), on the labs it
lists, graded in one uninterrupted batch from fresh folders, then checked
against the outcomes class.toml expects.

usage: throughput.py OUT NAME [--grader DIR] [--work DIR] [--arch ARCH]
                     [--timeout S] [--copies N] [-- BATCH OPTION ...]

--copies N: the class N times over (alice, alice-2, ...), each lab file made
distinct by a comment in its fence, so that the batch's fixed costs (trees,
preflight, ceilings) weigh as in a class of 10 N students.

--grader: the repository whose grader runs (default this one; another
commit's tree, e.g. from `git archive`, measures that commit the same way).
Writes OUT/throughput-NAME.json and OUT/throughput-NAME.log, and prints one
line: seconds, student-labs per hour, and whether every outcome was right."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import check_class  # noqa: E402
import make_class  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("name")
    ap.add_argument("--grader", type=Path, default=REPO)
    ap.add_argument("--work", type=Path, default=Path("/tmp/throughput"))
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--timeout", default="60")
    ap.add_argument("--copies", type=int, default=1, help="the class this many times over")
    # More `batch` options follow a `--` (split here: argparse would take the
    # first positional run, before any option, as all of them).
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.batch_options = argv[cut + 1 :]
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work / args.name
    shutil.rmtree(work, ignore_errors=True)  # nothing to resume: a run from scratch
    subs = make_class.write_class(work / "class", copies=args.copies)
    labs = tomllib.loads((HERE / "class.toml").read_text())["labs"]
    cmd = [
        sys.executable,
        "-m",
        "grader",
        "batch",
        *map(str, subs),
        "--out",
        str(work / "out"),
        "--arch",
        args.arch,
        "--timeout",
        args.timeout,
        *sum((["--lab", lab] for lab in labs), []),
        *args.batch_options,
    ]
    log_path = args.out / f"throughput-{args.name}.log"
    started = time.time()
    with open(log_path, "w") as log:
        done = subprocess.run(
            cmd,
            cwd=args.grader,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
    seconds = time.time() - started
    problems = check_class.check(work / "out", args.copies)
    student_labs = len(subs) * len(labs)
    figures = {
        "name": args.name,
        "grader": str(args.grader),
        "command": cmd,
        "exit_code": done.returncode,
        "seconds": round(seconds, 1),
        "student_labs": student_labs,
        "student_labs_per_hour": round(student_labs * 3600 / seconds),
        "check_problems": problems,
        "log_tail": log_path.read_text()[-4000:],
    }
    (args.out / f"throughput-{args.name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(
        f"throughput {args.name}: {student_labs} student-labs in {seconds:.0f} s, "
        f"{figures['student_labs_per_hour']} per hour; outcomes "
        + ("as expected" if not problems else f"WRONG: {problems}")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
