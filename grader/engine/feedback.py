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
from . import hints


def _lab_lines(r: LabResult) -> list[str]:
    lines = [
        f"### {r.lab}: {r.title}",
        "",
        f"- points: **{r.points:g} / {r.max_points}** "
        f"(correctness {r.points_correctness:g}/{r.max_correctness}, "
        f"performance {r.points_performance:g}/{r.max_performance})",
    ]
    if r.status == LabStatus.BUILD_FAILED:
        lines += ["- **does not compile**:", "", "```", r.reason.strip()[:3000], "```"]
    elif r.status == LabStatus.SKIPPED:
        lines.append(f"- not run: {r.reason}")
    elif r.status == LabStatus.POLICY:
        lines.append(f"- **policy check failed**: {r.reason}")
    if r.status in (LabStatus.GRADED, LabStatus.POLICY):
        lines.append(
            f"- tests: {r.tests_passed} passed, {r.tests_failed} failed, {r.tests_skipped} skipped"
        )
    if r.gbps is not None:
        lines.append(
            f"- bandwidth: {r.gbps:.0f} GB/s = {r.fraction:.3f} of the copy ceiling "
            f"({r.ceiling_gbps:.0f} GB/s); threshold {r.threshold}, floor {r.floor}"
        )
        lines += _below_threshold(r)
    if r.first_failure:
        lines.append(f"- first failure: `{r.first_failure.test}` ({r.first_failure.describe()})")
        for h in r.hints:
            lines.append(f"  - hint: {h}")
        lines.append(f"  - see: {hints.where_explained(r.lab, r.first_failure.hint)}")
        if r.seed:
            lines.append(f"  - replay: `--seed={r.seed}`")
    for note in r.notes:
        lines.append(f"- note: {note}")
    return lines + [""]


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
        f"Total: **{res.points:g} / {res.max_points}** (graded {res.date}, harness "
        f"commit {res.commit})",
        "",
    ]
    if res.error:
        out += [f"**The submission could not be graded:** {res.error}", ""]
    for note in res.notes:
        out.append(f"- note: {note}")
    if res.notes:
        out.append("")
    for r in res.labs:
        out += _lab_lines(r)
    out += answer_lines(res.answers)
    return "\n".join(out)


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
        text = "\n".join(_lab_lines(r))
        tests.append(
            {
                "name": f"{r.lab} correctness",
                "score": r.points_correctness,
                "max_score": r.max_correctness,
                "output": text,
                "status": "passed" if r.points_correctness == r.max_correctness else "failed",
            }
        )
        tests.append(
            {
                "name": f"{r.lab} performance",
                "score": r.points_performance,
                "max_score": r.max_performance,
                "output": (
                    f"{r.gbps:.0f} GB/s, {r.fraction:.3f} of the copy ceiling; "
                    f"threshold {r.threshold}"
                )
                if r.gbps is not None
                else "no bandwidth measured (performance needs every correctness test)",
                "status": "passed" if r.points_performance == r.max_performance else "failed",
            }
        )
    # Every "output" is Markdown (feedback's lines are); execution_time is whole seconds.
    return {
        "score": res.points,
        "output": "\n".join(res.notes + ([res.error] if res.error else [])),
        "output_format": "md",
        "execution_time": round(res.seconds),
        "tests": tests,
    }


def gradebook_csv(results: list[StudentResult], lab_ids: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student"] + lab_ids + ["total", "max", "notes", "result_sha256"])
    for res in sorted(results, key=lambda r: r.student):
        by_lab = {r.lab: r.points for r in res.labs}
        w.writerow(
            [res.student]
            + [f"{by_lab.get(l, 0):g}" for l in lab_ids]
            + [
                f"{res.points:g}",
                res.max_points,
                "; ".join(([res.error] if res.error else []) + res.notes)[:500],
                res.digest(),
            ]
        )
    return buf.getvalue()


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
