"""Runs pytest on the files given; exits 77, meson's SKIP, with the line
'SKIP <name>: <reason>' when every test skipped (no sandbox or no Slurm here),
so that `grader selftest` lists it as skipped, with the reason, not as passed.

usage: python3 pytest_or_skip.py NAME PYTEST_ARGS..."""

import sys

import pytest


class Outcomes:
    def __init__(self):
        self.ran = 0
        self.reasons: list[str] = []

    def pytest_runtest_logreport(self, report):
        if report.skipped:
            reason = (
                report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            )
            reason = reason.removeprefix("Skipped: ")
            if reason not in self.reasons:
                self.reasons.append(reason)
        elif report.when == "call" or report.failed:
            self.ran += 1


if __name__ == "__main__":
    name, args = sys.argv[1], sys.argv[2:]
    outcomes = Outcomes()
    code = pytest.main(args, plugins=[outcomes])
    if code == 0 and outcomes.ran == 0 and outcomes.reasons:
        print(f"SKIP {name}: {'; '.join(outcomes.reasons)}")
        sys.exit(77)
    sys.exit(int(code))
