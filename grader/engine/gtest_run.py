"""The results of one checker run, as data: each test (CaseResult) and the
run as a whole (BinaryRun). grader/engine/checker_run.py produces them from the
checker's result stream; parse_gtest_json reads gtest's own JSON report (the
recorded fixtures of the grader's tests)."""

from __future__ import annotations

from ..results import CaseResult
from ..status import CaseStatus

# gtest's own keys in a JSON testcase object; everything else is a RecordProperty.
_GTEST_KEYS = {
    "name",
    "file",
    "line",
    "status",
    "result",
    "timestamp",
    "time",
    "classname",
    "failures",
    "value_param",
    "type_param",
}


def _seconds_to_ms(text: str) -> float:
    try:
        return float(text.rstrip("s")) * 1000.0
    except ValueError:
        return 0.0


def parse_gtest_json(data: dict) -> tuple[dict[str, str], list[CaseResult]]:
    """gtest's --gtest_output=json report -> (program properties, cases)."""
    program = {
        k: str(v)
        for k, v in data.items()
        if isinstance(v, (str, int, float))
        and k not in ("tests", "failures", "disabled", "errors", "timestamp", "time", "name")
    }
    cases = []
    for suite in data.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("status") == "NOTRUN":
                continue
            failures = [f.get("failure", "") for f in t.get("failures", [])]
            if failures:
                status = CaseStatus.FAILED
            elif t.get("result") == "SKIPPED":
                status = CaseStatus.SKIPPED
            else:
                status = CaseStatus.PASSED
            props = {k: str(v) for k, v in t.items() if k not in _GTEST_KEYS}
            cases.append(
                CaseResult(
                    f"{suite['name']}.{t['name']}",
                    status,
                    _seconds_to_ms(t.get("time", "0s")),
                    props,
                    failures,
                )
            )
    return program, cases
