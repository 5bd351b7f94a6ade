#!/usr/bin/env python3
"""The batch evidence run: grade the class of class.toml, kill the batch
halfway, resume it, and check every student's outcome.

usage: run_class.py OUT [--work DIR] [--arch ARCH] [--timeout S]

Writes OUT/class-run.json (what each run graded, every student's result and
feedback, the check) and OUT/gradebook.csv; the trees live in --work."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import check_class  # noqa: E402
import make_class  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/class-run"))
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--timeout", default="60")
    ap.add_argument("--kill-after", type=int, default=5, help="students graded before the kill")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    # What an earlier run left in WORK would be resumed, not graded from the start.
    for left in ("class", "batch"):
        shutil.rmtree(args.work / left, ignore_errors=True)
    subs = make_class.write_class(args.work / "class", archives=True)
    batch_out = args.work / "batch"
    labs = sum(
        (
            ["--lab", lab]
            for lab in __import__("tomllib").loads((HERE / "class.toml").read_text())["labs"]
        ),
        [],
    )
    cmd = [
        sys.executable,
        "-m",
        "grader",
        "batch",
        *map(str, subs),
        "--out",
        str(batch_out),
        "--arch",
        args.arch,
        "--timeout",
        args.timeout,
        *labs,
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")

    # Each run's output goes to a file in OUT as it comes: a run cut off by a
    # time limit still shows how far it got.
    first_path, second_path = args.out / "batch-first.log", args.out / "batch-resumed.log"

    # First run, killed once enough students are done (SIGKILL: no chance to tidy up).
    with open(first_path, "w") as log:
        first = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    started = time.time()
    while first.poll() is None:
        done = list((batch_out / "students").glob("*/result.json"))
        if len(done) >= args.kill_after:
            os.killpg(first.pid, signal.SIGKILL)
            break
        time.sleep(1)
    first.wait()
    first_log = first_path.read_text()
    graded_before_kill = sorted(
        p.parent.name for p in (batch_out / "students").glob("*/result.json")
    )
    print(first_log)
    print(
        f"[run_class] killed the batch after {time.time() - started:.0f} s with "
        f"{len(graded_before_kill)} students graded",
        flush=True,
    )

    with open(second_path, "w") as log:
        subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    second_log = second_path.read_text()
    print(second_log)
    problems = check_class.check(batch_out)
    students = {}
    for d in sorted((batch_out / "students").iterdir()):
        students[d.name] = {
            "result": json.loads((d / "result.json").read_text()),
            "feedback_md": (d / "feedback.md").read_text(),
            "gradescope": json.loads((d / "results.json").read_text()),
        }
    gradebook = (batch_out / "gradebook.csv").read_text()
    (args.out / "gradebook.csv").write_text(gradebook)
    (args.out / "class-run.json").write_text(
        json.dumps(
            {
                "command": cmd,
                "graded_before_kill": graded_before_kill,
                "first_run_log": first_log[-5000:],
                "second_run_log": second_log[-5000:],
                "check_problems": problems,
                "students": students,
            },
            indent=2,
        )
        + "\n"
    )
    print(gradebook)
    print("class check:", "OK" if not problems else problems)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
