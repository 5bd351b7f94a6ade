#!/usr/bin/env python3
"""Passes when a lab's code FAILS its checker in the expected way.

Used by the repository's own tests for code that must not pass: untouched
skeletons (hint not_implemented) and the deliberately broken solutions of
tests/mutants (a missing bounds check, a missing __syncthreads(), ...). Passing
means: some test failed, and a failed test names the case (fail_n, fail_input)
and carries one of the expected hints. Exit 77 (skip) when the checker
skipped (no GPU), or when the one test that can show the bug (--needs, for
instance the 2^32-element case) skipped on this machine.

usage: expect_failure.py CHECKER RUNNER --lab LAB --hint HINT[,HINT...] [--needs TEST]
       expect_failure.py CHECKER RUNNER --lab LAB --sanitize TOOL --filter GTEST_FILTER

With --sanitize the runner must fail under compute-sanitizer's TOOL (for a
bug the outputs cannot show, such as a race in a max tree that loses nothing
on most runs); exit 77 where compute-sanitizer is missing or there is no GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grader.engine import sanitize
from grader.engine.checker_run import SKIP_EXIT, CheckerOptions, run_checker  # noqa: E402
from grader.infra import isolation  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checker", type=Path)
    ap.add_argument("runner", type=Path)
    ap.add_argument("--lab", required=True)
    ap.add_argument("--hint", help="comma-separated hints, any of which will do")
    ap.add_argument("--sanitize", choices=sanitize.TOOLS, help="expect findings of this tool")
    ap.add_argument("--filter", default=sanitize.SMALL_CASES, help="tests to run under it")
    ap.add_argument("--needs", help="the test that shows the bug, if only one can")
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    iso = isolation.contained()
    try:
        return check(args, iso)
    finally:
        iso.cleanup()


def check(args, iso) -> int:
    if args.sanitize:
        result = sanitize.run_tool(
            args.checker,
            args.lab,
            args.runner,
            iso,
            args.sanitize,
            sanitize.ToolOptions(gtest_filter=args.filter, timeout=args.timeout),
        )
        print(f"{args.sanitize}: {result.status}")
        for finding in result.findings[:5]:
            print("  " + finding)
        if result.status == "findings":
            return 0
        return SKIP_EXIT if result.status == "unavailable" else 1
    if not args.hint:
        print("--hint or --sanitize is required", file=sys.stderr)
        return 2
    hints = set(args.hint.split(","))
    run = run_checker(
        args.checker,
        args.lab,
        iso.runner(args.runner),
        CheckerOptions(impl="expect-failure", timeout=args.timeout, perf=False),
    )
    if run.status == "skipped":
        print(run.reason)
        return SKIP_EXIT
    if run.status in ("missing", "checker_failed"):
        print(f"NOT OK: {run.status}: {run.reason}\n{run.output_tail[-2000:]}")
        return 1
    matching = [
        c for c in run.failed if c.properties.get("fail_hint") in hints and "fail_n" in c.properties
    ]
    for c in matching[:3]:
        print(
            f"failed as expected: {c.name}: n={c.properties['fail_n']}, "
            f"input {c.properties.get('fail_input')}, hint {c.properties['fail_hint']}"
        )
        print("  " + (c.failures[0] if c.failures else "").replace("\n", "\n  "))
    if matching:
        print(
            f"OK: {len(run.failed)} of {len(run.cases)} tests failed; "
            f"{len(matching)} with hint {'/'.join(sorted(hints))}"
        )
        return 0
    needed = run.case(args.needs) if args.needs else None
    if needed is not None and needed.status == "skipped":
        print(
            f"SKIP: {args.needs} skipped here ({needed.failures or 'see its output'}), "
            "and only it shows this bug"
        )
        return SKIP_EXIT
    if not run.failed:
        print(
            f"NOT OK: all {len(run.cases)} tests passed or skipped; expected a failure "
            f"with hint {'/'.join(sorted(hints))}"
        )
        return 1
    print(f"NOT OK: {len(run.failed)} tests failed, none with hint {'/'.join(sorted(hints))}:")
    for c in run.failed[:5]:
        print(
            f"  {c.name} [{c.status}] hint={c.properties.get('fail_hint')}: "
            f"{(c.failures[0] if c.failures else '')[:300]}"
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())
