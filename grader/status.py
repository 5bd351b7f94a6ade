"""Every outcome the grader records, each spelled once.

StrEnum members are their strings: JSON (result.json, grade reports, the
committed evidence) keeps the words it always had, and a status read back from
a file compares equal to the member. A typo in code is an AttributeError at
once instead of a comparison that is quietly never true."""

from __future__ import annotations

from enum import StrEnum


class CaseStatus(StrEnum):
    """One test of a checker run."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    TIMED_OUT = "timed_out"
    NOT_RUN = "not_run"  # the run stopped before this test reported: counts as failed


class RunStatus(StrEnum):
    """A checker run as a whole."""

    COMPLETED = "completed"
    SKIPPED = "skipped"  # no GPU here
    TIMED_OUT = "timed_out"  # the whole lab
    MISSING = "missing"  # not built
    CHECKER_FAILED = "checker_failed"  # the grader's own fault: never scored


class LabStatus(StrEnum):
    """One lab of one student: what the report, the gradebook and exit codes read."""

    GRADED = "graded"
    BUILD_FAILED = "build_failed"
    SKIPPED = "skipped"  # built, not run: no GPU here
    POLICY = "policy"  # uses what the lab forbids
    MISSING = "missing"
    REFUSED = "refused"  # the submission was not plain files
    NOT_SUBMITTED = "not_submitted"  # no file of the lab in the submission: nothing ran
    ERROR = "error"  # the machine's or the grader's fault: not a grade


class SanitizerStatus(StrEnum):
    """One compute-sanitizer tool over a lab's small cases."""

    CLEAN = "clean"
    FINDINGS = "findings"
    FAILED = "failed"
    UNAVAILABLE = "unavailable"
    TIMED_OUT = "timed_out"
    # The tool found nothing, but the lab's outputs were wrong under it.
    TESTS_FAILED = "tests_failed"


class ProfileStatus(StrEnum):
    """One binary profiled under Nsight Compute."""

    OK = "ok"
    WRONG = "wrong"
    NOT_IMPLEMENTED = "not_implemented"
    ERROR = "error"
