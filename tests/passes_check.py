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
from dataclasses import dataclass
from pathlib import Path

from admission_check import children, events, launch, parse_args

FILTER = "*EdgeSizes*n1000_*"
SECOND = "*EdgeSizes*n257_*"  # the second pass's own filter


@dataclass
class Ran:
    code: int
    said: list  # each byte the checker wrote, with its runners alive and the mark then
    stream: list[dict]
    out: str
    marked: bool  # the second pass's runner started


def run(args, answer_next: bool = True, first=(), *extra: str) -> Ran:
    """The checker with two passes, `first` the first one's options, `extra`
    more arguments after the second's."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as results:
        mark = Path(tmp) / "second-runner-started"
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
        return Ran(checker.returncode, said, events(results), out, mark.exists())


def two_passes(args) -> list[str]:
    r = run(args)
    problems = []
    kinds = [e["event"] for e in r.stream if e["event"] != "start"]
    want = ["run"] + ["pass", "end", "end", "end", "runner_exit"] * 2
    if r.code != 0 or kinds != want:
        problems.append(f"two passes: exit {r.code}, events {kinds}:\n{r.out[-2000:]}")
    if any(e["result"] != "passed" for e in r.stream if e["event"] == "end"):
        problems.append(f"a test failed:\n{r.out[-2000:]}")
    exits = [e.get("pass") for e in r.stream if e["event"] == "runner_exit"]
    if exits != ["plain", "marked"]:
        problems.append(f"runner exits named {exits}")
    at = [i for i, e in enumerate(r.stream) if e["event"] == "pass"]
    for (lo, hi), size in zip(((at[0], at[-1]), (at[-1], len(r.stream))), ("n1000_", "n257_")):
        ran = [e["test"] for e in r.stream[lo:hi] if e["event"] == "end"]
        if not ran or any(size not in t for t in ran):
            problems.append(f"a pass ran {ran}, not its filter's ({size})")
    # r: up (a runner, no mark); n: none alive, no mark; r: the marked one up.
    if r.said != [("r", 1, False), ("n", 0, False), ("r", 1, True)]:
        problems.append(f"admission bytes and state {r.said}")
    if r.out.count("[checker pass ") != 2:
        problems.append(f"pass lines:\n{r.out[-2000:]}")
    print(f"two passes: exit {r.code}, said {r.said}")
    return problems


def not_answered(args) -> list[str]:
    r = run(args, answer_next=False)
    second = [e for e in r.stream if e["event"] == "pass"][1:]
    late = (
        [e for e in r.stream[r.stream.index(second[0]) :] if e["event"] == "start"]
        if second
        else []
    )
    print(f"not answered at 'n': exit {r.code}, second runner started: {r.marked}")
    if r.code != 4 or r.marked or late:
        return [
            f"not answered at 'n': exit {r.code}, second runner started {r.marked}, "
            f"tests started after {late}:\n{r.out[-2000:]}"
        ]
    return []


def first_pass_failed(args) -> list[str]:
    # The first pass's runner cannot start: its tests fail, and no other pass runs.
    r = run(args, True, ["--pass-prefix=/bin/false"], "--later-passes-if-first-passed")
    kinds = [e["event"] for e in r.stream if e["event"] != "start"]
    failed = [e for e in r.stream if e["event"] == "end" and e["result"] == "failed"]
    print(f"first pass failed: exit {r.code}, passes {kinds.count('pass')}, said {r.said}")
    if r.code != 1 or kinds.count("pass") != 1 or not failed or r.marked or r.said[1:]:
        return [
            f"first pass failed: exit {r.code}, events {kinds}, said {r.said}, "
            f"second runner started {r.marked}:\n{r.out[-2000:]}"
        ]
    return []


def later_pass_failed(args) -> list[str]:
    # A later pass that fails stops nothing: only the first pass's tests gate the rest.
    r = run(
        args,
        True,
        (),
        "--pass=broken",
        "--pass-prefix=/bin/false",
        "--pass=last",
        "--later-passes-if-first-passed",
    )
    passes = [e["name"] for e in r.stream if e["event"] == "pass"]
    print(f"a later pass failed: exit {r.code}, passes {passes}")
    if r.code != 1 or passes != ["plain", "marked", "broken", "last"]:
        return [f"a later pass failed: exit {r.code}, passes {passes}:\n{r.out[-2000:]}"]
    return []


def main() -> int:
    args = parse_args(__doc__)
    problems = []
    for case in (two_passes, not_answered, first_pass_failed, later_pass_failed):
        problems += case(args)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
