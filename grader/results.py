"""The grader's results as data, from one test to one student: what the
engine produces, the store keeps, and feedback, reports and evidence read.
Each serialises with asdict (statuses are StrEnums, so JSON holds their words)
and reads back with from_dict where results are loaded from files."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from .status import CaseStatus, LabStatus, RunStatus


@dataclass
class CaseResult:
    name: str  # Suite.Test, as --gtest_filter spells it
    status: CaseStatus
    time_ms: float = 0.0
    properties: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in (CaseStatus.PASSED, CaseStatus.SKIPPED)


@dataclass
class BinaryRun:
    binary: str
    status: RunStatus
    exit_code: int | None = None
    reason: str = ""  # why skipped / timed out / failed, one line
    properties: dict[str, str] = field(default_factory=dict)  # seed
    cases: list[CaseResult] = field(default_factory=list)
    output_tail: str = ""
    runner_exits: list[dict] = field(default_factory=list)  # how each runner ended

    @property
    def passed(self) -> int:
        return sum(c.status == CaseStatus.PASSED for c in self.cases)

    @property
    def failed(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.ok]

    def case(self, name: str) -> CaseResult | None:
        return next((c for c in self.cases if c.name == name), None)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class FailedCase:
    test: str
    status: CaseStatus
    n: str = ""
    input: str = ""
    variant: str = ""
    expected: str = ""
    got: str = ""
    hint: str = ""
    message: str = ""

    def describe(self) -> str:
        """The case in words: 'variant: n=257, input random; expected 3, got 5'."""
        where = f"n={self.n}, input {self.input}" if self.n else self.test
        if self.variant:
            where = f"{self.variant}: {where}"
        return where + (f"; expected {self.expected}, got {self.got}" if self.got else "")


@dataclass
class LabResult:
    lab: str
    title: str
    status: LabStatus
    reason: str = ""
    tests_passed: int = 0
    tests_failed: int = 0
    tests_skipped: int = 0
    first_failure: FailedCase | None = None
    hints: list[str] = field(default_factory=list)
    gbps: float | None = None
    ceiling_gbps: float | None = None
    fraction: float | None = None
    threshold: float = 0.0
    floor: float = 0.0
    points_correctness: float = 0.0
    points_performance: float = 0.0
    max_correctness: int = 0
    max_performance: int = 0
    seed: str = ""
    notes: list[str] = field(default_factory=list)
    sanitizer: dict[str, str] = field(default_factory=dict)  # tool -> clean | findings | ...
    timing: dict[str, float] = field(default_factory=dict)  # phase -> seconds (lab_grading.Phases)
    # What the reference solution reached in the same batch, on the same GPU (preflight).
    reference_fraction: float | None = None
    # Why the performance test did not run where the code had no say in it
    # ("--no-perf"); "" where it ran, or where a failed correctness test kept
    # it from running (a failure: no performance points). Not measured is no
    # score, never a 0: measured_max leaves those points out.
    unmeasured: str = ""

    @property
    def points(self) -> float:
        return self.points_correctness + self.points_performance

    @property
    def max_points(self) -> int:
        return self.max_correctness + self.max_performance

    @property
    def scored(self) -> bool:
        """Whether the lab has a grade: it ran (graded), or the code kept it
        from running (build_failed, policy, refused), or the student handed in
        none of it (not_submitted: a 0 that counts). Not run here (skipped),
        not built (missing) and not graded (error) are no grade, never a 0."""
        return self.status in (
            LabStatus.GRADED,
            LabStatus.BUILD_FAILED,
            LabStatus.POLICY,
            LabStatus.REFUSED,
            LabStatus.NOT_SUBMITTED,
        )

    @property
    def measured_max(self) -> int:
        """The points of what was graded: max_points, less the performance
        points where performance was not measured, and 0 for a lab not scored."""
        if not self.scored:
            return 0
        return self.max_correctness + (0 if self.unmeasured else self.max_performance)

    @property
    def correct(self) -> bool:
        return self.status == LabStatus.GRADED and self.tests_failed == 0 and self.tests_passed > 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["points"] = self.points
        d["max_points"] = self.max_points
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "LabResult":
        """The inverse of to_dict (reports, batch results, gpucheck evidence)."""
        d = {k: v for k, v in d.items() if k not in ("points", "max_points")}
        if d.get("first_failure"):
            d["first_failure"] = FailedCase(**d["first_failure"])
            d["first_failure"].status = CaseStatus(d["first_failure"].status)
        d["status"] = LabStatus(d["status"])
        return cls(**d)


@dataclass
class StudentResult:
    student: str
    origin: str
    submission_hash: str
    commit: str
    date: str
    labs: list[LabResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""  # not graded: the submission could not be opened, or the
    # machine failed (such a result is never reused on resume)
    options: str = ""  # fingerprint of the grading options (batch.config.BatchConfig)
    seconds: float = 0.0  # wall time spent grading this submission
    answers: dict[str, str] = field(default_factory=dict)  # lab -> ANSWERS.md, not scored
    hints_taken: dict[str, int] = field(default_factory=dict)  # lab -> its .hints-taken, not scored
    # The GPU of the worker that graded it (a Slurm task's: those it was given),
    # as UUIDs, comma-separated; empty without one. Whom to regrade when one
    # GPU's copy ceiling moved during a batch.
    gpu: str = ""

    @property
    def points(self) -> float:
        return round(sum(r.points for r in self.labs), 2)

    @property
    def max_points(self) -> int:
        return sum(r.max_points for r in self.labs)

    @property
    def measured_max(self) -> int:
        """The points of what was graded (LabResult.measured_max): the total's
        denominator in the gradebook, the feedback and Gradescope."""
        return sum(r.measured_max for r in self.labs)

    def summary_line(self) -> str:
        """One line of a batch's progress: the points, and each lab not graded or
        with failed tests."""
        bad = [
            r.lab[:2]
            + ":"
            + (r.status if r.status != LabStatus.GRADED else f"{r.tests_failed} failed")
            for r in self.labs
            if r.status != LabStatus.GRADED or r.tests_failed
        ]
        return (
            f"{self.student}: {self.points:g}/{self.measured_max}"
            + (f" ({', '.join(bad)})" if bad else "")
            + (f" ERROR {self.error}" if self.error else "")
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["labs"] = [r.to_dict() for r in self.labs]
        d["points"], d["max_points"] = self.points, self.max_points
        return d

    def to_json(self) -> str:
        """The text of result.json; the gradebook row carries its digest."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def digest(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]
