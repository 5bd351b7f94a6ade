#!/usr/bin/env python3
"""The checker's side of a run's admission to its GPU slot
(grader/engine/sharing/admission.py): with --admission-fds=READY,GO the checker starts
its runner, says it is up on READY, and runs no test until a byte comes on GO;
without one it runs none at all and exits 4.

usage: admission_check.py CHECKER RUNNER --lab LAB
Lab 01's checker speaks it as the GPU checkers do (checker_main.cpp), so this
runs where there is no GPU; a checker that finds no GPU makes it a skip (77).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKIP_EXIT = 77


def children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
                found.append(int(name))
    return found


def events(results) -> list[dict]:
    results.seek(0)
    return [json.loads(line) for line in results.read().decode().splitlines() if line.strip()]


def launch(args, results, *extra: str):
    """The checker against the solution's runner, its results on `results`, with
    admission pipes and `extra` arguments. Returns it, READY's end to read and
    GO's end to write."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    checker = subprocess.Popen(
        [
            str(args.checker),
            f"--lab={args.lab}",
            "--impl=solutions",
            f"--runner={args.runner}",
            "--seed=7",
            f"--result-fd={results.fileno()}",
            f"--admission-fds={ready_w},{go_r}",
            *extra,
        ],
        pass_fds=(results.fileno(), ready_w, go_r),
        env=dict(os.environ, LAB_SKIP_PERF="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    os.close(ready_w)
    os.close(go_r)
    return checker, ready_r, go_w


def start(args, results, admitted: bool):
    checker, ready_r, go_w = launch(args, results)
    ready = os.read(ready_r, 1)
    os.close(ready_r)
    if not ready:
        out = checker.communicate(timeout=60)[0].decode(errors="replace")
        if checker.returncode == SKIP_EXIT:
            print(out)
            sys.exit(SKIP_EXIT)
        sys.exit(f"the checker ended before it said it was up ({checker.returncode}):\n{out}")
    time.sleep(0.3)  # a test that did not wait would have started by now
    before = events(results)
    runners = children(checker.pid)
    if admitted:
        os.write(go_w, b"g")
    os.close(go_w)
    out = checker.communicate(timeout=300)[0].decode(errors="replace")
    return checker.returncode, before, runners, events(results), out


def parse_args(doc: str) -> argparse.Namespace:
    """CHECKER RUNNER --lab LAB, both paths absolute."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("checker", type=Path)
    ap.add_argument("runner", type=Path)
    ap.add_argument("--lab", required=True)
    args = ap.parse_args()
    # The runner starts in a folder of its own: meson's relative paths would not reach it.
    args.checker, args.runner = args.checker.resolve(), args.runner.resolve()
    return args


def main() -> int:
    args = parse_args(__doc__)
    problems = []
    with tempfile.TemporaryFile() as results:
        code, before, runners, after, out = start(args, results, admitted=True)
        if [e.get("event") for e in before] != ["run"]:
            problems.append(f"before its slot the checker reported {before}")
        if not runners:
            problems.append("the runner was not started before the slot (warm_up)")
        ended = [e for e in after if e.get("event") == "end"]
        if code != 0 or not ended or any(e["result"] not in ("passed", "skipped") for e in ended):
            problems.append(f"admitted, the solution's run ended {code}:\n{out[-2000:]}")
        print(f"admitted: {len(ended)} tests, exit {code}; runner up before the slot: {runners}")
    with tempfile.TemporaryFile() as results:
        code, _, _, after, out = start(args, results, admitted=False)
        started = [e for e in after if e.get("event") == "start"]
        if code != 4 or started:
            problems.append(f"not admitted: exit {code}, tests started {started}:\n{out[-2000:]}")
        print(f"not admitted: exit {code}, {len(started)} tests started")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
