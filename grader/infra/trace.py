"""GRADER_TRACE=1: what each worker of a batch does when, for a slow batch's
post-mortem (tests/submissions/throughput.py reads these lines). A trace is a
DEBUG record of the `grader.trace` logger; infra/log.py prints it."""

from __future__ import annotations

from .log import TRACE


def trace(line: str) -> None:
    """One line on standard output, with the seconds since the grader started."""
    TRACE.debug(line)
