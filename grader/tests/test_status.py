"""Statuses are StrEnums: files keep the words they always had, and what is
read back is a member again (or refused, never a silent stranger)."""

import json

import pytest

from grader.results import FailedCase, LabResult
from grader.status import CaseStatus, LabStatus


def _result(status) -> LabResult:
    return LabResult(
        lab="01_cpu_baseline",
        title="t",
        status=status,
        first_failure=FailedCase(test="A.b", status=CaseStatus.FAILED),
    )


def test_json_holds_the_plain_words():
    text = json.dumps(_result(LabStatus.BUILD_FAILED).to_dict())
    d = json.loads(text)
    assert d["status"] == "build_failed" and type(d["status"]) is str
    assert d["first_failure"]["status"] == "failed"
    assert f"{LabStatus.GRADED}" == "graded"  # reports print the word, not the member


def test_from_dict_gives_members_back():
    back = LabResult.from_dict(json.loads(json.dumps(_result("policy").to_dict())))
    assert back.status is LabStatus.POLICY
    assert back.first_failure is not None and back.first_failure.status is CaseStatus.FAILED


def test_an_unknown_status_is_refused():
    d = _result(LabStatus.GRADED).to_dict()
    d["status"] = "graded_by_me"
    with pytest.raises(ValueError):
        LabResult.from_dict(d)
