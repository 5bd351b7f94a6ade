#!/usr/bin/env python3
"""A checker of several passes (tests/support/checker_passes.hpp), the real
one: lab 01's checker runs the same tests twice, the second time against a
runner started anew behind a prefix of its own (here a shell that leaves a
mark, then runs the runner, and with a --gtest_filter of its own). With
admission pipes it says 'r' when up, 'n' between the passes with no runner
alive, and starts the second runner only once answered; a grader that closes
GO at 'n' ends it before that runner. With --later-passes-if-first-passed, a
first pass with a failed test (its runner cannot start) is the only one, and a
later pass with a failed test stops nothing.

usage: passes_check.py CHECKER RUNNER --lab LAB
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from admission_check import children, events, launch, parse_args

FILTER = "*EdgeSizes*n1000_*"
SECOND = "*EdgeSizes*n257_*"  # the second pass's own filter


def start(args, results, mark: Path, answer_next: bool, first=(), *extra: str):
    """The checker with two passes, `first` the first one's options; returns
    (exit code, what it said and what was true then, its stream's events,
    its output)."""
    checker, ready_r, go_w = launch(
        args,
        results,
        f"--gtest_filter={FILTER}",
        "--pass=plain",
        *first,
        "--pass=marked",
        "--pass-prefix=/bin/sh",
        "--pass-prefix=-c",
        '--pass-prefix=touch "$0" && exec "$@"',
        f"--pass-prefix={mark}",
        f"--pass-filter={SECOND}",
        *extra,
    )
    said = []
    while byte := os.read(ready_r, 1):
        # What holds when it asks: its runners (children), and the second's mark.
        said.append((byte.decode(), len(children(checker.pid)), mark.exists()))
        if byte == b"n" and not answer_next:
            break
        os.write(go_w, b"g")
    os.close(go_w)
    out = checker.communicate(timeout=300)[0].decode(errors="replace")
    os.close(ready_r)
    return checker.returncode, said, events(results), out


def main() -> int:
    args = parse_args(__doc__)
    problems = []
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as results:
        mark = Path(tmp) / "second-runner-started"
        code, said, stream, out = start(args, results, mark, answer_next=True)
        kinds = [e["event"] for e in stream if e["event"] != "start"]
        want = ["run"] + ["pass", "end", "end", "end", "runner_exit"] * 2
        if code != 0 or kinds != want:
            problems.append(f"two passes: exit {code}, events {kinds}:\n{out[-2000:]}")
        if any(e["result"] != "passed" for e in stream if e["event"] == "end"):
            problems.append(f"a test failed:\n{out[-2000:]}")
        exits = [e.get("pass") for e in stream if e["event"] == "runner_exit"]
        if exits != ["plain", "marked"]:
            problems.append(f"runner exits named {exits}")
        at = [i for i, e in enumerate(stream) if e["event"] == "pass"]
        for (lo, hi), size in zip(((at[0], at[-1]), (at[-1], len(stream))), ("n1000_", "n257_")):
            ran = [e["test"] for e in stream[lo:hi] if e["event"] == "end"]
            if not ran or any(size not in t for t in ran):
                problems.append(f"a pass ran {ran}, not its filter's ({size})")
        # r: up (a runner, no mark); n: none alive, no mark; r: the marked one up.
        if said != [("r", 1, False), ("n", 0, False), ("r", 1, True)]:
            problems.append(f"admission bytes and state {said}")
        if out.count("[checker pass ") != 2:
            problems.append(f"pass lines:\n{out[-2000:]}")
        print(f"two passes: exit {code}, said {said}")
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as results:
        mark = Path(tmp) / "second-runner-started"
        code, said, stream, out = start(args, results, mark, answer_next=False)
        second = [e for e in stream if e["event"] == "pass"][1:]
        late = (
            [e for e in stream[stream.index(second[0]) :] if e["event"] == "start"]
            if second
            else []
        )
        if code != 4 or mark.exists() or late:
            problems.append(
                f"not answered at 'n': exit {code}, second runner started {mark.exists()}, "
                f"tests started after {late}:\n{out[-2000:]}"
            )
        print(f"not answered at 'n': exit {code}, second runner started: {mark.exists()}")
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as results:
        mark = Path(tmp) / "second-runner-started"
        # The first pass's runner cannot start: its tests fail, and no other pass runs.
        code, said, stream, out = start(
            args,
            results,
            mark,
            True,
            ["--pass-prefix=/bin/false"],
            "--later-passes-if-first-passed",
        )
        kinds = [e["event"] for e in stream if e["event"] != "start"]
        failed = [e for e in stream if e["event"] == "end" and e["result"] == "failed"]
        if code != 1 or kinds.count("pass") != 1 or not failed or mark.exists() or said[1:]:
            problems.append(
                f"first pass failed: exit {code}, events {kinds}, said {said}, "
                f"second runner started {mark.exists()}:\n{out[-2000:]}"
            )
        print(f"first pass failed: exit {code}, passes {kinds.count('pass')}, said {said}")
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as results:
        mark = Path(tmp) / "second-runner-started"
        # A later pass that fails stops nothing: only the first pass's tests gate the rest.
        code, said, stream, out = start(
            args,
            results,
            mark,
            True,
            (),
            "--pass=broken",
            "--pass-prefix=/bin/false",
            "--pass=last",
            "--later-passes-if-first-passed",
        )
        passes = [e["name"] for e in stream if e["event"] == "pass"]
        if code != 1 or passes != ["plain", "marked", "broken", "last"]:
            problems.append(f"a later pass failed: exit {code}, passes {passes}:\n{out[-2000:]}")
        print(f"a later pass failed: exit {code}, passes {passes}")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
