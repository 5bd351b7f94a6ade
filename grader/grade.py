"""`grade`: build and run each lab on its own, score it, explain failures."""
from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import labmeta, policy, tools
from . import sanitize as sanitize_mod
from .gtest_run import run_gtest
from .scoring import LabResult, score


@dataclass
class GradeReport:
    commit: str
    date: str
    impl: str
    labs: list[LabResult] = field(default_factory=list)

    @property
    def points(self) -> float:
        return sum(r.points for r in self.labs)

    @property
    def max_points(self) -> int:
        return sum(r.max_points for r in self.labs)

    def to_dict(self) -> dict:
        return {"commit": self.commit, "date": self.date, "impl": self.impl,
                "points": self.points, "max_points": self.max_points,
                "labs": [r.to_dict() for r in self.labs]}


def grade_lab(lab: labmeta.Lab, build_dir: Path, *, impl: str = "labs", repo: Path = tools.REPO,
              timeout: float = 600.0, perf: bool = True, seed: int | None = None,
              env: dict[str, str] | None = None, sanitize: bool = False,
              sandbox=None) -> LabResult:
    """sandbox: a grader.sandbox.Cell: the lab is built and run in it."""
    violations = policy.check(lab, repo / impl / lab.id) if impl == "labs" else []
    target = f"{lab.id}-{impl}"
    built = (sandbox.build(build_dir, target, tree=repo) if sandbox is not None
             else tools.build(build_dir, target))
    if not built.ok:
        return LabResult(lab=lab.id, title=lab.title, status="build_failed",
                         reason=built.first_errors, max_correctness=lab.points_correctness,
                         max_performance=lab.points_performance, threshold=lab.threshold,
                         floor=lab.floor)
    env = dict(env or {}, **({} if perf else {"LAB_SKIP_PERF": "1"}))
    run = run_gtest(build_dir / "tests" / target, timeout=timeout, env=env, seed=seed,
                    sandbox=sandbox)
    result = score(lab, run)
    if sandbox is not None and result.status == "graded" and result.points_correctness == 0 \
            and not (result.first_failure and result.first_failure.hint == "not_implemented"):
        result.notes.append(sandbox.note())
    if sanitize and lab.needs_gpu and result.status == "graded":
        for tool_run in sanitize_mod.run_all(build_dir / "tests" / target):
            result.sanitizer[tool_run.tool] = tool_run.status
            if tool_run.status == "findings":
                result.points_correctness = result.points_performance = 0.0
                result.hints.insert(0, f"compute-sanitizer {tool_run.tool}: "
                                       + "; ".join(tool_run.findings[:3]))
    if violations:
        result.status = "policy"
        result.points_correctness = result.points_performance = 0.0
        result.reason = "; ".join(f"{v.file}:{v.line}: {v.why}" for v in violations)
    return result


def grade(lab_ids: list[str] | None = None, *, build_dir: Path | None = None,
          impl: str = "labs", timeout: float = 600.0, perf: bool = True,
          seed: int | None = None, sanitize: bool = False, progress=print) -> GradeReport:
    course = labmeta.load()
    labs = [course.lab(i) for i in lab_ids] if lab_ids else list(course.labs)
    build_dir = build_dir or tools.REPO / "build"
    tools.configure(build_dir)
    report = GradeReport(commit=tools.git_commit(), impl=impl,
                         date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    for lab in labs:
        progress(f"[grader] {lab.id}: building and testing ...")
        report.labs.append(grade_lab(lab, build_dir, impl=impl, timeout=timeout, perf=perf,
                                     seed=seed, sanitize=sanitize))
    return report


def write_json(report: GradeReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    os.replace(tmp, path)  # never leave a half-written report behind


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def table(report: GradeReport) -> str:
    rows = [("lab", "tests", "GB/s", "% ceiling", "threshold", "points")]
    for r in report.labs:
        tests = {"graded": f"{r.tests_passed}/{r.tests_passed + r.tests_failed}",
                 "policy": f"{r.tests_passed}/{r.tests_passed + r.tests_failed}",
                 "build_failed": "no build", "skipped": "needs GPU",
                 "missing": "missing"}.get(r.status, r.status)
        rows.append((r.lab, tests, "-" if r.gbps is None else f"{r.gbps:.0f}", _pct(r.fraction),
                     _pct(r.threshold), f"{r.points:g}/{r.max_points}"))
    rows.append(("total", "", "", "", "", f"{report.points:g}/{report.max_points}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    return "\n".join(lines)


def details(report: GradeReport) -> str:
    """What went wrong, lab by lab: the first failing case and the likely cause."""
    out = []
    for r in report.labs:
        if r.status == "build_failed":
            out.append(f"{r.lab}: does not compile:\n    " + r.reason.replace("\n", "\n    "))
        elif r.status == "skipped":
            out.append(f"{r.lab}: not graded here: {r.reason}")
        elif r.status == "policy":
            out.append(f"{r.lab}: policy check failed: {r.reason}")
        if r.first_failure:
            out.append(f"{r.lab}: {r.first_failure.test} failed ({r.first_failure.describe()})")
            for h in r.hints:
                out.append(f"    hint: {h}")
            out.append(f"    replay: --seed={r.seed}" if r.seed else "")
        for note in r.notes:
            out.append(f"{r.lab}: {note}")
    return "\n".join(l for l in out if l)
