"""`grade`: build and run each lab on its own, score it, explain failures.

Per lab: the string policy check (fast), the build of the lab's runner (the
student's code), the linked policy check (what the compiled code calls),
the trusted checker driving the runner, the score, and the small cases again
under compute-sanitizer (GPU labs, when it is installed)."""
from __future__ import annotations

import contextlib
import datetime
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from . import gpus, hints, isolation as isolation_mod, labmeta, policy, tools
from . import sanitize as sanitize_mod
from .atomic import write_atomic
from .checker_run import run_checker
from .gate import SANITIZER, Gate, held
from .gtest_run import BinaryRun
from .scoring import LabResult, score

# The timed tests (scoring.is_performance names them the same way), and the rest.
TIMED_TESTS = "*Bandwidth*"
UNTIMED_TESTS = "-*Bandwidth*"


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
        """Points of the labs that ran: a lab that could not run here (no GPU)
        is left out of the total, not counted as 0."""
        return sum(r.max_points for r in self.labs if r.status != "skipped")

    def to_dict(self) -> dict:
        return {"commit": self.commit, "date": self.date, "impl": self.impl,
                "points": self.points, "max_points": self.max_points,
                "labs": [r.to_dict() for r in self.labs]}


def checker_target(lab: labmeta.Lab) -> str:
    return f"checker-{lab.kind}"


def runner_target(lab: labmeta.Lab, impl: str) -> str:
    return f"{lab.id}-runner-{impl}"


def new_seed() -> int:
    """The grader chooses every run's seed (and records it): code that runs
    before a test binary's main() cannot pick one that suits it."""
    return secrets.randbits(62)


def _blank(lab: labmeta.Lab, status: str, reason: str) -> LabResult:
    return LabResult(lab=lab.id, title=lab.title, status=status, reason=reason,
                     max_correctness=lab.points_correctness,
                     max_performance=lab.points_performance, threshold=lab.threshold,
                     floor=lab.floor)


def refused(lab: labmeta.Lab, why: str) -> LabResult:
    """A lab of a submission that was refused before anything ran: 0, with the reason."""
    return _blank(lab, "refused", why)


class Phases:
    """Seconds spent in each phase of grading one lab (build, policy, tests,
    sanitizer): what a batch adds up to show where its time went."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - started, 2)


def grade_lab(lab: labmeta.Lab, build_dir: Path, **kw) -> LabResult:
    """Grades one lab (_grade_lab) and records how long each phase took."""
    phases = Phases()
    result = _grade_lab(lab, build_dir, phases=phases, **kw)
    result.timing = phases.seconds
    return result


class CheckerOptions(TypedDict):
    """run_checker's options that the untimed and the timed run of a lab share."""
    impl: str
    timeout: float
    seed: int
    env: dict[str, str] | None
    ceiling_gbps: float | None
    gpu_expected: bool
    call_timeout: float


@dataclass
class TimedPart:
    """A lab's timed tests, held back to run later and alone on the GPU (or the
    machine, lab 01), after its other tests passed beside other students'."""
    lab: labmeta.Lab
    result: LabResult        # scored from the untimed tests; completed by run()
    untimed: BinaryRun       # their run
    checker: Path
    runner: Path
    kw: CheckerOptions       # run_checker's options: impl, timeout, seed, env, ceiling ...

    def run(self, isolation=None) -> LabResult:
        """Runs the timed tests and scores the lab on every test; `isolation` as
        for grade_lab (a sandbox cell, or a fresh Contained when None)."""
        own = isolation is None
        iso = isolation_mod.contained() if own else isolation
        started = time.monotonic()
        try:
            timed = run_checker(self.checker, self.lab.id, iso.runner(self.runner),
                                gtest_filter=TIMED_TESTS, perf=True, **self.kw)
        finally:
            if own:
                iso.cleanup()
        untimed = self.untimed
        merged = type(untimed)(binary=untimed.binary, status=untimed.status,
                               exit_code=untimed.exit_code, reason=untimed.reason,
                               output_tail=untimed.output_tail + timed.output_tail[-3000:],
                               properties=untimed.properties,
                               cases=untimed.cases + timed.cases,
                               runner_exits=untimed.runner_exits + timed.runner_exits)
        if timed.status != "completed":
            merged.status, merged.reason = timed.status, timed.reason
        result = score(self.lab, merged)
        before = self.result
        result.notes = before.notes + [n for n in result.notes if n not in before.notes]
        result.sanitizer, result.timing = before.sanitizer, dict(before.timing)
        result.timing["timed"] = round(time.monotonic() - started, 2)
        return result


def timed_tests_later(lab: labmeta.Lab, result: LabResult) -> bool:
    """Whether a lab graded with its timed tests held back earns a timed run:
    only a lab with every correctness point (a lab that lost them cannot earn
    performance points) and a rubric with performance points."""
    return (result.status == "graded" and lab.points_performance > 0
            and result.points_correctness == result.max_correctness)


def _grade_lab(lab: labmeta.Lab, build_dir: Path, *, phases: Phases, impl: str = "labs",
               repo: Path = tools.REPO,
              timeout: float = 600.0, perf: bool = True, seed: int | None = None,
              env: dict[str, str] | None = None, sanitize: bool = True,
              isolation=None, ceiling_gbps: float | None = None,
              gpu_expected: bool | None = None, linked_policy: bool = True,
              policy_work: Path | None = None, gate: Gate | None = None,
              timed_later: list[TimedPart] | None = None) -> LabResult:
    """Grades one lab of the tree at `repo` (its `impl` folder) with `build_dir`.

    isolation: where the runner runs: a grader.sandbox.Cell (--sandbox) or a
    grader.isolation.Contained; default: a fresh Contained for this lab.
    gate: the GPU's gate (grader/gate.py), held shared while a checker runs.
    timed_later: when given (and perf is on), the timed tests do not run here;
    the lab's TimedPart is appended to it, to run later and alone."""
    seed = new_seed() if seed is None else seed
    if gpu_expected is None:
        gpu_expected = bool(gpus.list_gpus())
    lab_dir = repo / impl / lab.id
    violations = policy.check_strings(lab, lab_dir) if impl == "labs" else []
    target = runner_target(lab, impl)
    sandboxed = hasattr(isolation, "build")
    with phases("build"):
        built = (isolation.build(build_dir, target, tree=repo) if sandboxed
                 else tools.build(build_dir, target))
    if not built.ok:
        if built.machine_fault:
            return _blank(lab, "error", f"the build failed for the machine's sake, not the "
                                        f"code's: {built.machine_fault}")
        result = _blank(lab, "build_failed", built.first_errors)
        if violations:
            result.status = "policy"
            result.reason = "; ".join(_violation_text(v) for v in violations)
        return result
    if linked_policy and impl == "labs":
        for name in lab.files:
            reference = _reference(repo, lab, name)
            if reference is None:
                continue  # a student's own copy: the instructor's batch runs this check
            with phases("policy"):
                checked = policy.check_linked(
                    lab, lab_dir / name, skeleton_file=tools.REPO / "labs" / lab.id / name,
                    reference_file=reference, include_dirs=[repo / "common"],
                    work=policy_work or build_dir / "policy")
            violations += checked.violations
            if not checked.judged:
                # It built for grading but could not be checked: fail closed (the
                # batch's preflight checks the reference the same way first).
                violations.append(policy.Violation(
                    name, 0, "", "the policy check could not compile or read this file the "
                                 "way it must: " + (checked.log.strip()[-300:] or "unknown")))

    own = isolation is None
    iso = isolation_mod.contained() if own else isolation
    try:
        runner = build_dir / "tests" / target
        checker = build_dir / "tests" / checker_target(lab)
        later = timed_later is not None and perf
        kw = CheckerOptions(impl=impl, timeout=timeout, seed=seed, env=env,
                            ceiling_gbps=ceiling_gbps, gpu_expected=gpu_expected and lab.needs_gpu,
                            call_timeout=min(60.0, timeout / 2))
        with phases("tests"), held(gate if lab.needs_gpu else None):
            run = run_checker(checker, lab.id, iso.runner(runner), perf=perf and not later,
                              gtest_filter=UNTIMED_TESTS if later else None, **kw)
        result = score(lab, run)
        note = iso.note()
        if note and result.status == "graded" and result.points_correctness == 0 \
                and not (result.first_failure and result.first_failure.hint == "not_implemented"):
            result.notes.append(note)
        if sanitize and lab.needs_gpu and result.status == "graded" and result.points_correctness:
            with phases("sanitizer"), SANITIZER, held(gate):
                _sanitize(lab, build_dir, runner, iso, result, env, seed)
    finally:
        if own:
            iso.cleanup()
    if violations:
        result.status = "policy"
        result.points_correctness = result.points_performance = 0.0
        result.reason = "; ".join(_violation_text(v) for v in violations)
    elif later and timed_later is not None and timed_tests_later(lab, result):
        timed_later.append(TimedPart(lab, result, run, checker, runner, kw))
    elif later and result.status == "graded" and lab.points_performance > 0:
        result.notes.append("bandwidth not measured: it is timed once every correctness "
                            "test passes")
    return result


def _violation_text(v: policy.Violation) -> str:
    found = f" ({v.found})" if v.found else ""
    return f"{v.file}:{v.line}{found}: {v.why}"


def _reference(repo: Path, lab: labmeta.Lab, name: str) -> Path | None:
    """The reference solution's file, where this tree has one (not in a release)."""
    for root in (repo, tools.REPO):
        p = root / "solutions" / lab.id / name
        if p.is_file():
            return p
    return None


def _sanitize(lab, build_dir, runner, iso, result: LabResult, env, seed) -> None:
    if not sanitize_mod.available():
        result.sanitizer["all"] = "unavailable"
        return
    tools_for_lab = sanitize_mod.RDC_TOOLS if lab.rdc else sanitize_mod.DEFAULT_TOOLS
    for tool_run in sanitize_mod.run_all(build_dir / "tests" / checker_target(lab), lab.id, runner,
                                         iso, tools=tools_for_lab, env=env, seed=seed):
        result.sanitizer[tool_run.tool] = tool_run.status
        if tool_run.status == "findings":
            result.points_correctness = result.points_performance = 0.0
            result.hints.insert(0, f"compute-sanitizer {tool_run.tool} found a hazard that the "
                                   f"outputs did not show: " + "; ".join(tool_run.findings[:3]))


def grade(lab_ids: list[str] | None = None, *, build_dir: Path | None = None,
          impl: str = "labs", timeout: float = 600.0, perf: bool = True,
          seed: int | None = None, sanitize: bool = True, progress=print) -> GradeReport:
    course = labmeta.load()
    labs = [course.lab(i) for i in lab_ids] if lab_ids else list(course.labs)
    build_dir = build_dir or tools.REPO / "build"
    tools.configure(build_dir)
    have_gpu = bool(gpus.list_gpus())
    report = GradeReport(commit=tools.git_commit(), impl=impl,
                         date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    checkers = sorted({checker_target(lab) for lab in labs if have_gpu or not lab.needs_gpu})
    if checkers:
        progress(f"[grader] building the checkers ({', '.join(checkers)}) ...")
        built = tools.build(build_dir, checkers)
        if not built.ok:
            raise tools.SetupError(f"the checkers do not build (the harness, not your code):\n"
                                   f"{built.first_errors}")
    for lab in labs:
        if lab.needs_gpu and not have_gpu:
            # Build it (a compile error is worth knowing), but do not run it.
            progress(f"[grader] {lab.id}: building (no GPU here, so not run) ...")
            built = tools.build(build_dir, runner_target(lab, impl))
            report.labs.append(_blank(lab, "skipped" if built.ok else "build_failed",
                                      "not run: this machine has no NVIDIA GPU" if built.ok
                                      else built.first_errors))
            continue
        progress(f"[grader] {lab.id}: building and testing ...")
        report.labs.append(grade_lab(lab, build_dir, impl=impl, timeout=timeout, perf=perf,
                                     seed=seed, sanitize=sanitize, gpu_expected=have_gpu))
    return report


def write_json(report: GradeReport, path: Path) -> None:
    write_atomic(path, json.dumps(report.to_dict(), indent=2) + "\n")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def table(report: GradeReport) -> str:
    rows = [("lab", "tests", "GB/s", "% ceiling", "threshold", "points")]
    for r in report.labs:
        tests = {"graded": f"{r.tests_passed}/{r.tests_passed + r.tests_failed}",
                 "policy": f"{r.tests_passed}/{r.tests_passed + r.tests_failed}",
                 "build_failed": "no build", "skipped": "not run (no GPU)",
                 "missing": "missing", "error": "grader error"}.get(r.status, r.status)
        points = "not run" if r.status == "skipped" else f"{r.points:g}/{r.max_points}"
        rows.append((r.lab, tests, "-" if r.gbps is None else f"{r.gbps:.0f}", _pct(r.fraction),
                     _pct(r.threshold), points))
    skipped = sum(r.status == "skipped" for r in report.labs)
    rows.append(("total" + (f" ({skipped} not run)" if skipped else ""), "", "", "", "",
                 f"{report.points:g}/{report.max_points}"))
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
            out.append(f"{r.lab}: {r.reason}")
        elif r.status == "policy":
            out.append(f"{r.lab}: policy check failed: {r.reason}")
        elif r.status == "error":
            out.append(f"{r.lab}: NOT GRADED, a fault of this machine or of the grader: {r.reason}")
        if r.first_failure:
            out.append(f"{r.lab}: {r.first_failure.test} failed ({r.first_failure.describe()})")
            for h in r.hints:
                out.append(f"    hint: {h}")
            out.append(f"    see: {hints.where_explained(r.lab, r.first_failure.hint)}")
            out.append(f"    replay: --seed={r.seed}" if r.seed else "")
        for note in r.notes:
            out.append(f"{r.lab}: {note}")
    return "\n".join(l for l in out if l)
