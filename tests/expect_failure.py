#!/usr/bin/env python3
"""Passes when a test binary FAILS in the expected way.

Used by the repository's own tests for code that must not pass: untouched
skeletons (hint not_implemented) and the deliberately broken solutions of
tests/mutants (a missing bounds check, a missing __syncthreads(), ...). Passing
means: some test failed, and a failed test names the case (fail_n, fail_input)
and carries one of the expected hints. Exit 77 (skip) when the binary skipped,
or when the one test that can show the bug (--needs, for instance the
2^32-element case) skipped on this machine.

usage: expect_failure.py BINARY --hint HINT[,HINT...] [--needs TEST] [--timeout S]
       expect_failure.py BINARY --sanitize TOOL --filter GTEST_FILTER

With --sanitize the binary must fail under compute-sanitizer's TOOL (for a
bug the outputs cannot show, such as a race in a max tree that loses nothing
on most runs); exit 77 where compute-sanitizer is missing or there is no GPU.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from grader import sanitize  # noqa: E402
from grader.gtest_run import SKIP_EXIT, run_gtest  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--hint", help="comma-separated hints, any of which will do")
    ap.add_argument("--sanitize", choices=sanitize.TOOLS, help="expect findings of this tool")
    ap.add_argument("--filter", default=sanitize.SMALL_CASES, help="tests to run under it")
    ap.add_argument("--needs", help="the test that shows the bug, if only one can")
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    if args.sanitize:
        result = sanitize.run_tool(Path(args.binary), args.sanitize, args.filter, args.timeout)
        print(f"{args.sanitize}: {result.status}")
        for finding in result.findings[:5]:
            print("  " + finding)
        if result.status == "findings":
            return 0
        return SKIP_EXIT if result.status == "unavailable" else 1
    if not args.hint:
        ap.error("--hint or --sanitize is required")
    hints = set(args.hint.split(","))

    run = run_gtest(args.binary, timeout=args.timeout)
    if run.status == "skipped":
        print(run.reason)
        return SKIP_EXIT
    if run.status == "missing":
        print(run.reason)
        return 1
    matching = [c for c in run.failed if c.properties.get("fail_hint") in hints
                and "fail_n" in c.properties]
    for c in matching[:3]:
        print(f"failed as expected: {c.name}: n={c.properties['fail_n']}, "
              f"input {c.properties.get('fail_input')}, hint {c.properties['fail_hint']}")
        print("  " + (c.failures[0] if c.failures else "").replace("\n", "\n  "))
    if matching:
        print(f"OK: {len(run.failed)} of {len(run.cases)} tests failed; "
              f"{len(matching)} with hint {'/'.join(sorted(hints))}")
        return 0
    needed = run.case(args.needs) if args.needs else None
    if needed is not None and needed.status == "skipped":
        print(f"SKIP: {args.needs} skipped here ({needed.failures or 'see its output'}), "
              "and only it shows this bug")
        return SKIP_EXIT
    if not run.failed:
        print(f"NOT OK: all {len(run.cases)} tests passed or skipped; expected a failure "
              f"with hint {'/'.join(sorted(hints))}")
        return 1
    print(f"NOT OK: {len(run.failed)} tests failed, none with hint {'/'.join(sorted(hints))}:")
    for c in run.failed[:5]:
        print(f"  {c.name} [{c.status}] hint={c.properties.get('fail_hint')}: "
              f"{(c.failures[0] if c.failures else '')[:300]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
