"""`grade`: build and run each lab on its own, score it, explain failures
(the grading of one lab is grader/engine/lab_grading.py)."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import labmeta
from ..engine import hint_ladder, hints, predictions
from ..engine.lab_grading import (
    GradeOptions,
    blank_result,
    cannot_grade,
    checker_target,
    grade_lab,
    runner_target,
)
from ..infra import gpus, log, toolchain
from ..infra.atomic import write_atomic
from ..results import LabResult
from ..status import LabStatus


@dataclass
class GradeReport:
    commit: str
    date: str
    impl: str
    labs: list[LabResult] = field(default_factory=list)
    # Read from the graded folder, never scored: the hints the student took
    # (.hints-taken) and the predictions of their ANSWERS.md, by lab.
    hints_taken: dict[str, int] = field(default_factory=dict)
    predicted: dict[str, predictions.Predictions] = field(default_factory=dict)
    has_hints: set[str] = field(default_factory=set)  # labs with a hints.toml

    @property
    def points(self) -> float:
        return sum(r.points for r in self.labs)

    @property
    def max_points(self) -> int:
        """Points of the labs that ran: a lab that could not run here (no GPU)
        is left out of the total, not counted as 0."""
        return sum(r.max_points for r in self.labs if r.status != LabStatus.SKIPPED)

    def to_dict(self) -> dict:
        return {
            "commit": self.commit,
            "date": self.date,
            "impl": self.impl,
            "points": self.points,
            "max_points": self.max_points,
            "labs": [r.to_dict() for r in self.labs],
            "hints_taken": self.hints_taken,
            "predictions": {lab: p.values for lab, p in self.predicted.items() if p.values},
        }


def grade(
    lab_ids: list[str] | None = None,
    *,
    build_dir: Path | None = None,
    impl: str = "labs",
    timeout: float = 600.0,
    perf: bool = True,
    seed: int | None = None,
    sanitize: bool = True,
    progress=log.progress,
) -> GradeReport:
    course = labmeta.load()
    labs = [course.lab(i) for i in lab_ids] if lab_ids else list(course.labs)
    build_dir = build_dir or toolchain.REPO / "build"
    toolchain.configure(build_dir)
    gpu_count = len(gpus.visible())
    have_gpu = gpu_count > 0
    report = GradeReport(
        commit=toolchain.git_commit(),
        impl=impl,
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    checkers = sorted(
        {
            checker_target(lab)
            for lab in labs
            if (have_gpu or not lab.needs_gpu) and cannot_grade(lab, gpu_count) is None
        }
    )
    if checkers:
        progress(f"[grader] building the checkers ({', '.join(checkers)}) ...")
        built = toolchain.build(build_dir, checkers)
        if not built.ok:
            raise toolchain.SetupError(
                f"the checkers do not build (the harness, not your code):\n{built.first_errors}"
            )
    for lab in labs:
        read_students_notes(report, lab.id, toolchain.REPO / impl / lab.id)
        why_not = (
            "not run: this machine has no NVIDIA GPU"
            if lab.needs_gpu and not have_gpu
            else cannot_grade(lab, gpu_count)
        )
        if why_not:
            # Build it (a compile error is worth knowing), but do not run it.
            progress(f"[grader] {lab.id}: building only, not run here ...")
            built = toolchain.build(build_dir, runner_target(lab, impl))
            report.labs.append(
                blank_result(
                    lab,
                    LabStatus.SKIPPED if built.ok else LabStatus.BUILD_FAILED,
                    why_not if built.ok else built.first_errors,
                )
            )
            continue
        progress(f"[grader] {lab.id}: building and testing ...")
        report.labs.append(
            grade_lab(
                lab,
                build_dir,
                options=GradeOptions(
                    impl=impl,
                    timeout=timeout,
                    perf=perf,
                    seed=seed,
                    sanitize=sanitize,
                    gpu_expected=have_gpu,
                ),
            )
        )
    return report


def read_students_notes(report: GradeReport, lab_id: str, lab_dir: Path) -> None:
    """What the student wrote beside the code: their predictions and their count
    of hints taken (when they took any)."""
    report.predicted[lab_id] = predictions.read(lab_dir)
    if (toolchain.REPO / "labs" / lab_id / hint_ladder.HINTS).is_file():
        report.has_hints.add(lab_id)
    if (lab_dir / hint_ladder.TAKEN).is_file():
        report.hints_taken[lab_id] = hint_ladder.taken(lab_dir)


def write_json(report: GradeReport, path: Path) -> None:
    write_atomic(path, json.dumps(report.to_dict(), indent=2) + "\n")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def table(report: GradeReport) -> str:
    rows = [("lab", "tests", "GB/s", "% ceiling", "threshold", "points")]
    for r in report.labs:
        tests = {
            LabStatus.GRADED: f"{r.tests_passed}/{r.tests_passed + r.tests_failed}",
            LabStatus.POLICY: f"{r.tests_passed}/{r.tests_passed + r.tests_failed}",
            LabStatus.BUILD_FAILED: "no build",
            # Why (no GPU, too few for lab 12) is said below the table, in the details.
            LabStatus.SKIPPED: "not run",
            LabStatus.MISSING: "missing",
            LabStatus.ERROR: "grader error",
        }.get(r.status, r.status)
        points = "not run" if r.status == LabStatus.SKIPPED else f"{r.points:g}/{r.max_points}"
        rows.append(
            (
                r.lab,
                tests,
                "-" if r.gbps is None else f"{r.gbps:.0f}",
                _pct(r.fraction),
                _pct(r.threshold),
                points,
            )
        )
    skipped = sum(r.status == LabStatus.SKIPPED for r in report.labs)
    rows.append(
        (
            "total" + (f" ({skipped} not run)" if skipped else ""),
            "",
            "",
            "",
            "",
            f"{report.points:g}/{report.max_points}",
        )
    )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths))
        )
        for row in rows
    ]
    for i, r in enumerate(report.labs):
        said = predictions.beside_bandwidth(
            report.predicted.get(r.lab, predictions.Predictions()), r.gbps, r.fraction
        )
        if said:
            lines[i + 1] += "  " + "; ".join(said)
    rule = "-" * len(lines[0])
    lines.insert(1, rule)
    lines.insert(len(lines) - 1, rule)
    return "\n".join(lines)


def details(report: GradeReport) -> str:
    """What went wrong, lab by lab: the first failing case and the likely cause."""
    out = []
    for r in report.labs:
        if r.status == LabStatus.BUILD_FAILED:
            out.append(f"{r.lab}: does not compile:\n    " + r.reason.replace("\n", "\n    "))
        elif r.status == LabStatus.SKIPPED:
            out.append(f"{r.lab}: {r.reason}")
        elif r.status == LabStatus.POLICY:
            out.append(f"{r.lab}: policy check failed: {r.reason}")
        elif r.status == LabStatus.ERROR:
            out.append(f"{r.lab}: NOT GRADED, a fault of this machine or of the grader: {r.reason}")
        if r.first_failure:
            out.append(f"{r.lab}: {r.first_failure.test} failed ({r.first_failure.describe()})")
            for h in r.hints:
                out.append(f"    hint: {h}")
            out.append(f"    see: {hints.where_explained(r.lab, r.first_failure.hint)}")
            if r.lab in report.has_hints:
                out.append(f"    stuck: python3 -m grader hint {r.lab[:2]} (one hint at a time)")
            out.append(f"    replay: --seed={r.seed}" if r.seed else "")
        for note in r.notes:
            out.append(f"{r.lab}: {note}")
        if r.lab in report.hints_taken:
            out.append(f"{r.lab}: {hint_ladder.taken_line(report.hints_taken[r.lab])}")
        for note in report.predicted.get(r.lab, predictions.Predictions()).notes:
            out.append(f"{r.lab}: {note}")
    return "\n".join(l for l in out if l)
