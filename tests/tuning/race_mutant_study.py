#!/usr/bin/env python3
"""How often a racy mutant escapes its lab's tests: the checker run ROUNDS
times over RUNNER (a built mutant, tests/mutants), each round's failed tests
and hints kept. A round escapes the edge-size cases when none of them failed,
and escapes the suite when no test did. Lab 10's fire_and_forget (its next
pass launched before its parent grid ends) passed every test in 2 GPU runs of
9 before the InputsTakingTurns case (contract_check.cuh).

usage: race_mutant_study.py CHECKER RUNNER --lab LAB [--rounds 20] [--json OUT]
   e.g. race_mutant_study.py build/tests/checker-gpu_sum \\
          build/tests/mutants/10_nested_dynamic-mutant-fire_and_forget --lab 10_nested_dynamic
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from grader.engine.checker_run import CheckerOptions, run_checker  # noqa: E402
from grader.infra import isolation  # noqa: E402

NEW_CASE = "InputsTakingTurns"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checker", type=Path)
    ap.add_argument("runner", type=Path)
    ap.add_argument("--lab", required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    iso = isolation.contained()
    rounds = []
    try:
        for k in range(args.rounds):
            started = time.monotonic()
            run = run_checker(
                args.checker,
                args.lab,
                iso.runner(args.runner),
                CheckerOptions(impl="race-study", timeout=900.0, perf=False),
            )
            failed = {c.name: c.properties.get("fail_hint", "?") for c in run.failed}
            rounds.append(
                {
                    "round": k + 1,
                    "status": str(run.status),
                    "seconds": round(time.monotonic() - started, 1),
                    "failed": failed,
                    "caught_before_new_case": any(NEW_CASE not in n for n in failed),
                    "caught_by_new_case": any(NEW_CASE in n for n in failed),
                }
            )
            r = rounds[-1]
            print(
                f"round {k + 1}: {len(failed)} failed; before the new case "
                f"{'caught' if r['caught_before_new_case'] else 'ESCAPED'}, new case "
                f"{'caught' if r['caught_by_new_case'] else 'ESCAPED'}",
                flush=True,
            )
    finally:
        iso.cleanup()
    summary = {
        "rounds": len(rounds),
        "escaped_before_new_case": sum(not r["caught_before_new_case"] for r in rounds),
        "escaped_new_case": sum(not r["caught_by_new_case"] for r in rounds),
        "escaped_suite": sum(not r["failed"] for r in rounds),
    }
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
