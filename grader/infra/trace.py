"""GRADER_TRACE=1: what each worker of a batch does when, for a slow batch's
post-mortem (tests/submissions/throughput.py reads these lines)."""

from __future__ import annotations

import os
import time

_START = time.monotonic()


def trace(line: str) -> None:
    """One line on standard output, with the seconds since the grader started."""
    if os.environ.get("GRADER_TRACE") == "1":
        print(f"[trace +{time.monotonic() - _START:.1f} s] {line}", flush=True)
