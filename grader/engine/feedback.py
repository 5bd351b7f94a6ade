"""What a student and a gradebook receive: Markdown feedback, Gradescope's
results.json, one CSV row per student."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from ..infra.atomic import write_atomic
from ..infra import store
from ..infra.store import digest, load_result
from ..results import LabResult, StudentResult
from ..status import LabStatus
from . import hint_ladder, hints, predictions


def _lab_lines(r: LabResult, hints_taken: int | None = None, answers: str = "") -> list[str]:
    """A lab's part of the feedback; beside the grade, what the student wrote and
    is never scored: the hints they took and the predictions in their answers."""
    said = predictions.parse(answers, f"labs/{r.lab}/{predictions.ANSWERS}")
    lines = [f"### {r.lab}: {r.title}", "", _points_line(r)]
    if r.status == LabStatus.BUILD_FAILED:
        lines += ["- **does not compile**:", "", "```", r.reason.strip()[:3000], "```"]
    elif r.status == LabStatus.SKIPPED:
        lines.append(f"- not run: {r.reason}")
    elif r.status == LabStatus.POLICY:
        lines.append(f"- **policy check failed**: {r.reason}")
    elif r.status == LabStatus.NOT_SUBMITTED:
        lines.append("- not submitted: the submission has no folder for this lab")
    if r.status in (LabStatus.GRADED, LabStatus.POLICY):
        lines.append(
            f"- tests: {r.tests_passed} passed, {r.tests_failed} failed, {r.tests_skipped} skipped"
        )
    if r.gbps is not None:
        lines.append(
            f"- bandwidth: {r.gbps:.0f} GB/s = {r.fraction:.3f} of the copy ceiling "
            f"({r.ceiling_gbps:.0f} GB/s); threshold {r.threshold}, floor {r.floor}"
        )
        lines += [f"  - {x}" for x in predictions.beside_bandwidth(said, r.gbps, r.fraction)]
        lines += _below_threshold(r)
    if r.first_failure:
        lines.append(f"- first failure: `{r.first_failure.test}` ({r.first_failure.describe()})")
        for h in r.hints:
            lines.append(f"  - hint: {h}")
        lines.append(f"  - see: {hints.where_explained(r.lab, r.first_failure.hint)}")
        if r.seed:
            lines.append(f"  - replay: `--seed={r.seed}`")
    for note in r.notes + said.notes:
        lines.append(f"- note: {note}")
    if hints_taken is not None:
        lines.append(f"- {hint_ladder.taken_line(hints_taken)}")
    return lines + [""]


# A lab without a grade, in the words every view uses (gradebook, feedback, Gradescope).
NOT_SCORED = {
    LabStatus.SKIPPED: "not run",
    LabStatus.ERROR: "not graded",
    LabStatus.MISSING: "not built",
}


def _points_line(r: LabResult) -> str:
    """The lab's points out of what was graded: what did not run, or was not
    measured, is said so and left out of the denominator, never a 0."""
    if not r.scored:
        return f"- points: none: {NOT_SCORED.get(r.status, r.status)} here (no score, not a 0)"
    if r.unmeasured:
        return (
            f"- points: **{r.points:g} / {r.measured_max}** "
            f"(correctness {r.points_correctness:g}/{r.max_correctness}; performance "
            f"not measured: {r.unmeasured}, its {r.max_performance} points not counted)"
        )
    return (
        f"- points: **{r.points:g} / {r.max_points}** "
        f"(correctness {r.points_correctness:g}/{r.max_correctness}, "
        f"performance {r.points_performance:g}/{r.max_performance})"
    )


def _below_threshold(r: LabResult) -> list[str]:
    """Why a correct lab lost performance points, and where to look."""
    if r.fraction is None or r.points_performance >= r.max_performance or not r.correct:
        return []
    got = (
        "no performance points: points start at the floor"
        if r.fraction <= r.floor
        else f"{r.points_performance:g} of {r.max_performance} performance points: full points "
        "at the threshold"
    )
    ref = (
        f"; the reference solution reached {r.reference_fraction:.3f} on this GPU in this batch"
        if r.reference_fraction
        else ""
    )
    return [
        f"  - {got} ({r.fraction:.3f} of the ceiling against a threshold of {r.threshold} "
        f"and a floor of {r.floor}){ref}.",
        f'  - what to look at: the "Bandwidth threshold" section of '
        f"labs/{r.lab}/README.md, and `python3 -m grader grade {r.lab[:2]}` to measure "
        "again on your machine.",
    ]


def markdown(res: StudentResult) -> str:
    out = [
        f"# Feedback for {res.student}",
        "",
        f"Total: **{res.points:g} / {res.measured_max}** (graded {res.date}, harness "
        f"commit {res.commit})",
        "",
    ]
    if res.measured_max != res.max_points:
        out += [UNCOUNTED.format(res.max_points - res.measured_max), ""]
    if res.error:
        out += [f"**The submission could not be graded:** {res.error}", ""]
    for note in res.notes:
        out.append(f"- note: {note}")
    if res.notes:
        out.append("")
    for r in res.labs:
        out += _lab_lines(r, res.hints_taken.get(r.lab), res.answers.get(r.lab, ""))
    out += answer_lines(res.answers)
    return "\n".join(out)


# How the feedback explains a total out of less than the rubric's points.
UNCOUNTED = (
    "{} of the rubric's points were not counted: a lab that did not run here, or whose "
    "performance was not measured, has no score for that part, which is not a 0. The "
    "total is out of what was graded; the gradebook's max and not_measured columns say "
    "the same."
)


def answer_lines(answers: dict[str, str]) -> list[str]:
    """The student's answers to the handouts' questions, verbatim in code blocks
    (their Markdown is shown, never rendered into the feedback's own)."""
    if not answers:
        return []
    out = ["## Answers to the handouts' questions (not scored)", ""]
    for lab_id, text in sorted(answers.items()):
        longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
        fence = "`" * max(3, longest + 1)
        out += [f"### {lab_id}", "", fence + "text", text.rstrip("\n"), fence, ""]
    return out


def gradescope(res: StudentResult) -> dict:
    """Gradescope's autograder results.json: one test entry per lab and part."""
    tests = []
    for r in res.labs:
        text = "\n".join(_lab_lines(r, res.hints_taken.get(r.lab), res.answers.get(r.lab, "")))
        speed = (
            f"{r.gbps:.0f} GB/s, {r.fraction:.3f} of the copy ceiling; threshold {r.threshold}"
            if r.gbps is not None
            else "no bandwidth measured (performance needs every correctness test)"
        )
        tests += [_test(r, "correctness", text), _test(r, "performance", speed)]
    # Every "output" is Markdown (feedback's lines are); execution_time is whole seconds.
    return {
        "score": res.points,
        "output": "\n".join(res.notes + ([res.error] if res.error else [])),
        "output_format": "md",
        "execution_time": round(res.seconds),
        "tests": tests,
    }


def _test(r: LabResult, part: str, output: str) -> dict:
    """One Gradescope test of a lab's part: passed or failed only where it
    ran; a part that did not (the lab not run here, performance not measured)
    is there with max_score 0 and says why, and has no status: no score, not
    a failure."""
    why = "" if r.scored else f"{NOT_SCORED.get(r.status, r.status)}: {r.reason}"
    if not why and part == "performance" and r.unmeasured:
        why = f"not measured: {r.unmeasured}"
    name = f"{r.lab} {part}"
    if why:
        return {"name": name, "score": 0.0, "max_score": 0, "output": why}
    score, most = (
        (r.points_correctness, r.max_correctness)
        if part == "correctness"
        else (r.points_performance, r.max_performance)
    )
    if r.status == LabStatus.NOT_SUBMITTED:
        output = "not submitted: the submission has no folder for this lab"
    status = "passed" if score == most else "failed"
    return {"name": name, "score": score, "max_score": most, "output": output, "status": status}


def gradebook_csv(results: list[StudentResult], lab_ids: list[str]) -> str:
    """One row a student: each lab's points where it has a grade, else the
    words for why not (not run, not graded, not built; "-": not in this
    result); the total out of `max`, the points of what was graded; and
    `not_measured`, each lab or part that was not (UNCOUNTED explains it to the
    student)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student"] + lab_ids + ["total", "max", "not_measured", "notes", "result_sha256"])
    for res in sorted(results, key=lambda r: r.student):
        by_lab = {r.lab: r for r in res.labs}
        w.writerow(
            [res.student]
            + [lab_cell(by_lab.get(l)) for l in lab_ids]
            + [
                f"{res.points:g}",
                res.measured_max,
                "; ".join(_unmeasured(r) for r in res.labs if _unmeasured(r)),
                "; ".join(([res.error] if res.error else []) + res.notes)[:500],
                res.digest(),
            ]
        )
    return buf.getvalue()


def lab_cell(r: LabResult | None) -> str:
    """A lab's cell of the gradebook (and the class report's table)."""
    if r is None:
        return "-"
    if r.status == LabStatus.NOT_SUBMITTED:
        return "not submitted"  # a 0 in the total, said in words
    return f"{r.points:g}" if r.scored else NOT_SCORED.get(r.status, str(r.status))


def _unmeasured(r: LabResult) -> str:
    if not r.scored:
        return f"{r.lab[:2]} {NOT_SCORED.get(r.status, r.status)}"
    return f"{r.lab[:2]} performance ({r.unmeasured})" if r.unmeasured else ""


# How a result says that an earlier run of the same submission was not graded.
EARLIER = "an earlier run of this same submission was not graded"


def earlier_errors(previous: StudentResult | None, res: StudentResult) -> list[str]:
    """What `res` keeps of `previous`, the result it replaces, when both are of
    the same submission (its content): the error of a run that was not graded,
    and what that result kept of the runs before it. A regrade replaces
    result.json, and an error can be evidence against the code: a lab wrong in
    one timed run and right in the next is not graded (timed_stage.inconsistent),
    and its next run may pass by luck; the instructor still sees that it once
    gave a wrong answer, and the values."""
    if (
        previous is None
        or not res.submission_hash
        or previous.submission_hash != res.submission_hash
    ):
        return []
    kept = [n for n in previous.notes if n.startswith(EARLIER)]
    if previous.error:
        kept.append(f"{EARLIER} ({previous.date}, grader {previous.commit}): {previous.error}")
    return [n for n in kept if n not in res.notes]


def write_student(students_dir: Path, res: StudentResult) -> str:
    """A student's feedback, Gradescope results, the signature of its result
    (store.sign) and result.json (last: marks done), keeping in `res.notes`
    what the result it replaces said of runs that were not graded
    (earlier_errors). Returns the digest of result.json, which the gradebook
    row carries."""
    d = students_dir / res.student
    res.notes[:0] = earlier_errors(load_result(d / "result.json"), res)
    write_views(students_dir, res)
    write_atomic(d / store.SIGNATURE, store.sign(res) + "\n")
    text = res.to_json()
    write_atomic(d / "result.json", text)
    return digest(text)


def write_views(students_dir: Path, res: StudentResult) -> None:
    """What a student reads of `res`: feedback.md and Gradescope's
    results.json. A batch writes them again for a result it keeps, so that
    both always say what the result (and the gradebook) says."""
    d = students_dir / res.student
    write_atomic(d / "feedback.md", markdown(res))
    write_atomic(d / "results.json", json.dumps(gradescope(res), indent=2))
