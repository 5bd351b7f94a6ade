"""The results of one checker run, as data: each test (CaseResult) and the
run as a whole (BinaryRun). grader/checker_run.py produces them from the
checker's result stream; parse_gtest_json reads gtest's own JSON report (the
recorded fixtures of the grader's tests)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
# gtest's own keys in a JSON testcase object; everything else is a RecordProperty.
_GTEST_KEYS = {"name", "file", "line", "status", "result", "timestamp", "time", "classname",
               "failures", "value_param", "type_param"}


@dataclass
class CaseResult:
    name: str                 # Suite.Test, as --gtest_filter spells it
    status: str               # passed | failed | skipped | timed_out | not_run
    time_ms: float = 0.0
    properties: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "skipped")


@dataclass
class BinaryRun:
    binary: str
    # completed | skipped (no GPU here) | timed_out (the whole lab) | missing (not
    # built) | checker_failed (the grader's own fault: never scored)
    status: str
    exit_code: int | None = None
    reason: str = ""          # why skipped / timed out / failed, one line
    properties: dict[str, str] = field(default_factory=dict)   # seed
    cases: list[CaseResult] = field(default_factory=list)
    output_tail: str = ""
    runner_exits: list[dict] = field(default_factory=list)     # how each runner ended

    @property
    def passed(self) -> int:
        return sum(c.status == "passed" for c in self.cases)

    @property
    def failed(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.ok]

    def case(self, name: str) -> CaseResult | None:
        return next((c for c in self.cases if c.name == name), None)

    def to_dict(self) -> dict:
        return asdict(self)


def _seconds_to_ms(text: str) -> float:
    try:
        return float(text.rstrip("s")) * 1000.0
    except ValueError:
        return 0.0


def parse_gtest_json(data: dict) -> tuple[dict[str, str], list[CaseResult]]:
    """gtest's --gtest_output=json report -> (program properties, cases)."""
    program = {k: str(v) for k, v in data.items()
               if isinstance(v, (str, int, float)) and k not in
               ("tests", "failures", "disabled", "errors", "timestamp", "time", "name")}
    cases = []
    for suite in data.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("status") == "NOTRUN":
                continue
            failures = [f.get("failure", "") for f in t.get("failures", [])]
            if failures:
                status = "failed"
            elif t.get("result") == "SKIPPED":
                status = "skipped"
            else:
                status = "passed"
            props = {k: str(v) for k, v in t.items() if k not in _GTEST_KEYS}
            cases.append(CaseResult(f"{suite['name']}.{t['name']}", status,
                                    _seconds_to_ms(t.get("time", "0s")), props, failures))
    return program, cases
