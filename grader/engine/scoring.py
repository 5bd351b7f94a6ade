"""From one lab's test run to points, by the rubric in grader/labs.toml.

Correctness points: all or nothing. A reduction that is wrong for one size is
wrong; partial credit per test would reward the sizes a missing bounds check
happens to get right. Performance points: only when every correctness test
passes, linear in the measured fraction of the copy ceiling from the lab's
`floor` (0 points) to its `threshold` (all points)."""

from __future__ import annotations

from ..labmeta import Lab
from ..results import BinaryRun, CaseResult, FailedCase, LabResult
from ..status import CaseStatus, LabStatus, RunStatus
from . import hints


def is_performance(case: CaseResult) -> bool:
    return "Bandwidth" in case.name.split(".")[0]


def _float(props: dict[str, str], key: str) -> float | None:
    try:
        return float(props[key])
    except (KeyError, ValueError):
        return None


def performance_points(lab: Lab, fraction: float | None) -> float:
    if fraction is None or lab.points_performance == 0:
        return 0.0
    if lab.threshold <= lab.floor:
        share = 1.0 if fraction >= lab.threshold else 0.0
    else:
        share = (fraction - lab.floor) / (lab.threshold - lab.floor)
    return round(lab.points_performance * min(1.0, max(0.0, share)), 2)


def failed_case(case: CaseResult) -> FailedCase:
    p = case.properties
    return FailedCase(
        test=case.name,
        status=case.status,
        n=p.get("fail_n", p.get("n", "")),
        input=p.get("fail_input", p.get("input", "")),
        variant=p.get("fail_variant", ""),
        expected=p.get("fail_expected", ""),
        got=p.get("fail_got", ""),
        hint=hints.case_hint(case),
        message=(case.failures[0] if case.failures else "")[:2000],
    )


def bandwidth_figures(case: CaseResult) -> list[dict]:
    """The figures a bandwidth test recorded, one per variant (lab 01 and lab 11
    time several functions; only `graded` ones are scored)."""
    p = case.properties
    prefixes = sorted({k[: -len("fraction")] for k in p if k.endswith("fraction")})
    out = []
    for pre in prefixes:
        out.append(
            {
                "variant": pre.rstrip("_"),
                "fraction": _float(p, pre + "fraction"),
                "gbps": _float(p, pre + "gbps"),
                "graded": p.get(pre + "graded", "1") == "1",
                "implausible": p.get(pre + "implausible") == "1",
            }
        )
    return out


def score(lab: Lab, run: BinaryRun, perf: bool = True) -> LabResult:
    """The lab's result from its run; perf=False: graded under --no-perf,
    its performance not measured (not_measured), never a 0."""
    r = _score(lab, run)
    if not perf:
        not_measured(r, "--no-perf")
    return r


def _score(lab: Lab, run: BinaryRun) -> LabResult:
    r = LabResult(
        lab=lab.id,
        title=lab.title,
        status=LabStatus.GRADED,
        threshold=lab.threshold,
        floor=lab.floor,
        max_correctness=lab.points_correctness,
        max_performance=lab.points_performance,
        seed=run.properties.get("seed", ""),
    )
    if run.status == RunStatus.MISSING:
        r.status, r.reason = LabStatus.MISSING, run.reason
        return r
    if run.status == RunStatus.SKIPPED:
        r.status, r.reason = LabStatus.SKIPPED, run.reason
        return r
    if run.status == RunStatus.CHECKER_FAILED:
        # The grader's own fault: never a grade (batch records it and regrades).
        r.status, r.reason = LabStatus.ERROR, run.reason
        return r
    if run.status == RunStatus.TIMED_OUT:
        r.notes.append(f"stopped: {run.reason}; the tests that had not run count as failed")
    r.tests_passed = sum(c.status == CaseStatus.PASSED for c in run.cases)
    r.tests_failed = sum(not c.ok for c in run.cases)
    r.tests_skipped = sum(c.status == CaseStatus.SKIPPED for c in run.cases)
    failed = [c for c in run.cases if not c.ok]
    if failed:
        # The most telling failure first: one the lab's code caused (a test
        # not run comes last whatever its size, else a test refused after a
        # hang could name a smaller size and hide the hang: docs/decisions.md,
        # "A test that did not run is never the first failure"), a correctness
        # case with a named size, the smallest first.
        failed.sort(
            key=lambda c: (
                hints.not_run(c),
                is_performance(c),
                "fail_n" not in c.properties,
                c.properties.get("fail_n") == "0",
                _size(c.properties.get("fail_n")),
            )
        )
        r.first_failure = failed_case(failed[0])
        r.hints = [hints.explain(r.first_failure, failed[0])]
        r.hints += hints.cross_case_hints([c for c in run.cases if not is_performance(c)])
    if not [c for c in run.cases if not is_performance(c)]:
        r.notes.append("no correctness tests ran")
        return r
    # A timed call that went wrong (or crashed) is a wrong answer like any other.
    correct = not failed
    if correct:
        r.points_correctness = float(lab.points_correctness)
    r.points_performance = _performance(lab, run, r) if correct else 0.0
    if not correct and r.fraction is not None:
        r.notes.append("performance earns points only once every correctness test passes")
    return r


def not_measured(r: LabResult, why: str) -> None:
    """Marks the lab's performance as not measured, for `why` (--no-perf):
    every lab with performance points, correct or not, so that one option
    gives one denominator to the whole class."""
    if r.status == LabStatus.GRADED and r.max_performance and r.gbps is None:
        r.unmeasured = why
        r.points_performance = 0.0


def _size(text: str | None) -> int:
    try:
        return int(text or "")
    except ValueError:
        return 1 << 62


def _performance(lab: Lab, run: BinaryRun, r: LabResult) -> float:
    """A lab is as fast as its slowest graded variant; a graded bandwidth test
    without a figure scores 0, and so does a figure no correct program can reach."""
    bandwidth = [c for c in run.cases if is_performance(c)]
    if not bandwidth:
        return 0.0
    if all(c.status == CaseStatus.SKIPPED for c in bandwidth):
        r.unmeasured = r.unmeasured or "the performance checks were skipped here"
        return 0.0
    graded = []
    for c in bandwidth:
        figures = bandwidth_figures(c)
        if not figures and c.status != CaseStatus.SKIPPED:
            r.notes.append(f"{c.name} recorded no bandwidth: no performance points")
            return 0.0
        # Variants timed for the handout only (lab 11's naive sum) are not scored.
        graded += [f for f in figures if f["graded"]]
    if not graded:
        r.notes.append("no graded bandwidth was recorded: no performance points")
        return 0.0
    slowest = min(graded, key=lambda f: f["fraction"] if f["fraction"] is not None else -1.0)
    r.fraction, r.gbps = slowest["fraction"], slowest["gbps"]
    r.ceiling_gbps = next(
        (_float(c.properties, "ceiling_gbps") for c in bandwidth if "ceiling_gbps" in c.properties),
        None,
    )
    implausible = [f for f in graded if f["implausible"]]
    if implausible:
        r.notes.append(
            "a bandwidth above what this machine can read (over 1.10 of the GPU's copy "
            "ceiling or its memory's theoretical peak; over 2 of the host's copy for lab 01) "
            "cannot come from reading the whole input: performance is not scored; the "
            "instructor will look at it"
        )
        return 0.0
    return performance_points(lab, r.fraction)


def reference_short(r: LabResult) -> str | None:
    """Why the reference's own timed run fell short of its performance points
    here, or None. Not a stop, as a failed correctness test is: one timed run
    moves by some percent between calls, and a reference once measured well
    below its usual fraction with nothing else running (see docs/decisions.md,
    "A reference short of its points warns the instructor"): the instructor is
    told that students' performance points on this machine are suspect."""
    if not r.max_performance or r.points_performance >= r.max_performance:
        return None
    fraction = f"{r.fraction:.3f}" if r.fraction is not None else "no figure"
    return (
        f"the reference solution earns {r.points_performance:g} of its "
        f"{r.max_performance} performance points on this machine ({fraction} of the copy "
        f"ceiling, threshold {r.threshold:.3f}): a busy or slow machine, whose students "
        "would lose points that are not theirs to lose; grade on a quiet machine, or "
        "read their performance points with this in mind"
    )
