"""The lines the grader prints as it works, through `logging` (the `grader`
loggers): progress at INFO, one line per step of a grade or a batch; traces at
DEBUG, what each worker of a batch does when, for a slow batch's post-mortem,
printed while GRADER_TRACE=1. The command line installs one handler that prints
both on standard output, each line flushed as it is written (a batch's lines are
read live): a progress line as it is, a trace after `[trace +N s] `, the seconds
since the grader started (tests/submissions/throughput.py reads these)."""

from __future__ import annotations

import logging
import os
import sys
import time

START = time.monotonic()
ROOT = logging.getLogger("grader")
PROGRESS = logging.getLogger("grader.progress")
TRACE = logging.getLogger("grader.trace")


def progress(line: str) -> None:
    """One line of progress: the default of every `progress` parameter."""
    PROGRESS.info(line)


class Lines(logging.Formatter):
    """A record as the line the grader prints: a trace with its time, else the message."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno <= logging.DEBUG:
            return f"[trace +{time.monotonic() - START:.1f} s] {text}"
        return text


class Stdout(logging.StreamHandler):
    """Standard output as it is when a line is written, not when the handler was
    made: a test's capture, or a stream a caller swapped in, gets the line."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value) -> None:
        pass


def traces_on(record: logging.LogRecord) -> bool:
    """A trace is printed while GRADER_TRACE=1 (read at each line, as a test sets it)."""
    return record.levelno > logging.DEBUG or os.environ.get("GRADER_TRACE") == "1"


def install() -> logging.Handler:
    """The handler that prints the grader's lines (once: a second call returns it)."""
    for handler in ROOT.handlers:
        if isinstance(handler, Stdout):
            return handler
    handler = Stdout()
    handler.setFormatter(Lines())
    handler.addFilter(traces_on)
    ROOT.addHandler(handler)
    ROOT.setLevel(logging.DEBUG)
    ROOT.propagate = False  # printed once, whatever the root logger has
    return handler
