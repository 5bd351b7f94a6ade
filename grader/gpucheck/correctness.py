"""gpucheck's correctness parts: labs (every reference solution and untouched
skeleton through its checker, as `grade` runs them, and what the sanitizer
adds) and suites (the meson suites that expect failures: skeletons, mutants,
peers). Together because both ask one question, whether every test ends as
it should, where bench asks how fast; the driver only runs them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from .. import labmeta
from ..engine import lab_grading, sanitize
from ..engine.checker_run import CheckerOptions, run_checker
from ..engine.scoring import score
from ..infra import evidence, isolation
from ..infra.evidence import GpuCheck, ImplRun, LabEvidence
from ..commands import grade
from ..commands.selftest import summarize


def labs_part(
    course: labmeta.Course, build_dir: Path, ev: GpuCheck, save: Callable[[], None]
) -> bool:
    """True where a solution fails, a skeleton earns a point, or the sanitizer
    finds anything."""
    bad = False
    labs = ev.labs if ev.labs is not None else {}
    for lab in course.labs:
        if lab.spans_gpus:
            continue  # lab 12: tests/gpu_runs/lab12_gpu.sh runs its tests on 2+ GPUs
        entry = labs.setdefault(lab.id, LabEvidence())
        checker = build_dir / "tests" / lab_grading.checker_target(lab)
        for impl in ("solutions", "labs"):
            print(f"[gpucheck] {lab.id} {impl} ...", flush=True)
            runner = build_dir / "tests" / lab_grading.runner_target(lab, impl)
            iso = isolation.contained()
            try:
                t0 = time.time()
                run_ = run_checker(
                    checker,
                    lab.id,
                    iso.runner(runner),
                    CheckerOptions(
                        impl=impl,
                        timeout=900,
                        seed=lab_grading.new_seed(),
                        gpu_expected=lab.needs_gpu,
                    ),
                )
                setattr(entry, impl, ImplRun(run_, score(lab, run_), round(time.time() - t0, 1)))
                if impl == "solutions" and lab.needs_gpu and sanitize.available():
                    # What the sanitizer adds to grading one lab (it runs by default).
                    t0 = time.time()
                    tools_run = sanitize.run_tools(
                        checker,
                        lab.id,
                        runner,
                        iso,
                        sanitize.tools_for(lab),
                    )
                    entry.sanitizer = evidence.SanitizerRun(
                        round(time.time() - t0, 1), {t.tool: t.status for t in tools_run}
                    )
                    bad |= any(t.status != "clean" for t in tools_run)
            finally:
                iso.cleanup()
        sol, skel = entry.solutions, entry.labs
        assert sol is not None and skel is not None  # both ran above, or raised
        bad |= sol.run.status != "completed" or bool(sol.score.tests_failed)
        bad |= skel.score.points != 0
        save()
    for impl in ("labs", "solutions"):
        runs = [getattr(e, impl) for e in labs.values()]
        report = grade.GradeReport(
            commit=ev.machine.commit,
            date="",
            impl=impl,
            labs=[r.score for r in runs if r is not None],
        )
        setattr(
            ev,
            f"grade_output_{impl}",
            (grade.details(report) + "\n\n" + grade.table(report)).strip(),
        )
    return bad


def suites_part(meson: list[str], build_dir: Path, ev: GpuCheck) -> bool:
    """True where a suite did not end as it expects."""
    print("[gpucheck] expected failures (skeletons, mutants) and peers ...", flush=True)
    # Correctness only (LAB_SKIP_PERF): three at a time fit the GPU's memory
    # with a 2^32-element case each.
    from ..infra import proc

    proc.run(
        meson
        + [
            "test",
            "-C",
            str(build_dir),
            "--no-rebuild",
            "--print-errorlogs",
            "--num-processes",
            "3",
            "--suite",
            "skeletons",
            "--suite",
            "mutants",
            "--suite",
            "peers",
            "--suite",
            "harness",
        ],
        timeout=3600,
    )
    testlog = build_dir / "meson-logs" / "testlog.json"
    suites = summarize(testlog) if testlog.exists() else {"failed": ["no meson log"]}
    ev.meson_suites = evidence.MesonSuites(**{"passed": [], **suites})
    if testlog.exists():
        ev.meson_log = [
            evidence.MesonTest(t["name"], t["result"], t.get("duration"), t.get("stdout"))
            for t in map(json.loads, testlog.read_text().splitlines())
        ]
    return bool(ev.meson_suites.failed)
