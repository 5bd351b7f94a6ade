"""A compute-sanitizer tool that did not finish cleanly on a student's lab
(grader/engine/sharing/reference_tools.py): wrong outputs under the tool are no clean
bill, and such an ending costs the lab's points only where the same tool runs
clean over the reference's runner on the same GPU, run once per lab and tool."""

import threading
import time
from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.sharing import reference_tools
from grader.engine import sanitize
from grader.engine.sharing import shared_gpu
from grader.engine.sharing.reference_tools import ReferenceTools
from grader.engine.sanitize import SanitizerRun
from grader.engine.sharing.gate import Gate
from grader.results import BinaryRun, CaseResult, LabResult
from grader.status import CaseStatus, LabStatus, RunStatus, SanitizerStatus
from grader.tests.test_tests_then_tools import Iso

COURSE = labmeta.load()


def tool_pass(*statuses: CaseStatus, runner_code: int = 0) -> BinaryRun:
    run = BinaryRun("checker", RunStatus.COMPLETED)
    for k, status in enumerate(statuses):
        failures = [] if status == CaseStatus.PASSED else [f"case {k}: expected 7, got 0"]
        run.cases.append(CaseResult(f"Edge.n{k}", status, 1.0, {}, failures))
    run.runner_exits = [{"how": {"code": runner_code}}]
    return run


def test_wrong_outputs_under_a_tool_are_no_clean_bill():
    # A lab that skips its kernel under the tool shows the tool nothing to find.
    got = sanitize.verdict("racecheck", tool_pass(CaseStatus.PASSED, CaseStatus.FAILED))
    assert got.status == SanitizerStatus.TESTS_FAILED
    assert "1 of 2 tests failed under racecheck" in got.findings[0]
    assert "expected 7, got 0" in got.findings[0]
    clean = sanitize.verdict("racecheck", tool_pass(CaseStatus.PASSED, CaseStatus.SKIPPED))
    assert clean.status == SanitizerStatus.CLEAN
    # A runner that ended abnormally stays what it was: the tool did not finish.
    crashed = sanitize.verdict("memcheck", tool_pass(CaseStatus.NOT_RUN, runner_code=139))
    assert crashed.status == SanitizerStatus.FAILED


def kept(tmp_path: Path, lab_id: str = "07_atomic_finish") -> ReferenceTools:
    runner = tmp_path / "runner-07"
    runner.write_text("#!/bin/sh\n")
    tools = ReferenceTools()
    tools.keep(lab_id, runner)
    runner.write_text("a student's build\n")  # the copy is what the reference built
    return tools


def test_each_labs_tool_runs_once_over_the_reference_whoever_asks(tmp_path):
    tools = kept(tmp_path)
    runs: list[Path] = []

    def run(runner: Path) -> SanitizerRun:
        runs.append(runner)
        time.sleep(0.05)  # the others wait for this one
        return SanitizerRun("memcheck", SanitizerStatus.CLEAN)

    got: list = []
    threads = [
        threading.Thread(
            target=lambda: got.append(tools.verdict("07_atomic_finish", "memcheck", run))
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert got == [SanitizerStatus.CLEAN] * 4 and len(runs) == 1
    assert runs[0].read_text() == "#!/bin/sh\n"  # the kept copy, not the worker's runner now
    assert tools.verdict("08_max_reduction", "memcheck", run) is None  # nothing kept


def test_a_reference_run_that_raises_proves_nothing_and_is_tried_again(tmp_path):
    tools = kept(tmp_path)

    def broken(runner):
        raise OSError("no such file")

    assert tools.verdict("07_atomic_finish", "racecheck", broken) is None
    ok = tools.verdict(
        "07_atomic_finish", "racecheck", lambda r: SanitizerRun("racecheck", SanitizerStatus.CLEAN)
    )
    assert ok == SanitizerStatus.CLEAN


def graded_07() -> LabResult:
    lab = COURSE.lab("07")
    return LabResult(
        lab=lab.id,
        title=lab.title,
        status=LabStatus.GRADED,
        points_correctness=float(lab.points_correctness),
        max_correctness=lab.points_correctness,
        max_performance=lab.points_performance,
    )


def sanitized(monkeypatch, tmp_path, ran, reference, reference_status=SanitizerStatus.CLEAN):
    """shared_gpu.sanitize_lab of lab 07 with the tools' runs `ran` made already
    (as tests_then_tools hands them over); the reference's runs answer
    `reference_status`. Returns the result and the runners the reference ran."""
    monkeypatch.setattr(sanitize, "available", lambda: True)
    asked: list[tuple[str, Path]] = []

    students = sanitize.run_tools  # a test's own stand-in for the student's runs, if any

    def run_tools(checker, lab_id, runner, iso, tools, **kw):
        if not Path(runner).name.endswith(".reference"):
            return students(checker, lab_id, runner, iso, tools, **kw)
        asked.extend((tool, Path(runner)) for tool in tools)
        return [SanitizerRun(tool, reference_status) for tool in tools]

    monkeypatch.setattr(sanitize, "run_tools", run_tools)
    result = graded_07()
    shared_gpu.sanitize_lab(
        COURSE.lab("07"),
        tmp_path / "checker",
        tmp_path / "runner",
        Iso(),
        result,
        shared_gpu.ToolsSetting(Gate("gpu", run_slots=1), {}, 3, reference),
        ran=ran,
    )
    return result, asked


def runs_of(status: SanitizerStatus, tool: str = "memcheck") -> list[SanitizerRun]:
    """Lab 07's three tools, `tool` ending in `status`, the others clean."""
    return [
        SanitizerRun(t, status if t == tool else SanitizerStatus.CLEAN, ["the detail"])
        for t in sanitize.tools_for(COURSE.lab("07"))
    ]


@pytest.mark.parametrize(
    "status",
    [SanitizerStatus.TESTS_FAILED, SanitizerStatus.FAILED, SanitizerStatus.TIMED_OUT],
)
def test_an_unclean_ending_costs_the_points_where_the_reference_runs_clean(
    monkeypatch, tmp_path, status
):
    result, asked = sanitized(monkeypatch, tmp_path, runs_of(status), kept(tmp_path))
    assert result.points_correctness == 0 and result.points_performance == 0
    assert result.sanitizer["memcheck"] == status
    assert "under compute-sanitizer memcheck your lab" in result.hints[0]
    assert "the detail" in result.hints[0]
    assert [t for t, _ in asked] == ["memcheck"]  # the reference, under that tool only
    assert asked[0][1].name.endswith(".reference")


def test_it_costs_nothing_where_the_reference_does_not_run_clean_either(monkeypatch, tmp_path):
    result, _ = sanitized(
        monkeypatch,
        tmp_path,
        runs_of(SanitizerStatus.FAILED, "racecheck"),
        kept(tmp_path),
        reference_status=SanitizerStatus.FAILED,
    )
    assert result.points_correctness == COURSE.lab("07").points_correctness
    assert not result.hints
    assert any("not counted" in n and "did not run clean" in n for n in result.notes)


def test_without_a_reference_it_costs_nothing_and_says_the_batch_counts_it(monkeypatch, tmp_path):
    result, asked = sanitized(monkeypatch, tmp_path, runs_of(SanitizerStatus.TIMED_OUT), None)
    assert result.points_correctness == COURSE.lab("07").points_correctness and not asked
    assert any("the instructor's batch" in n for n in result.notes)


def test_a_clean_lab_never_runs_the_reference(monkeypatch, tmp_path):
    result, asked = sanitized(monkeypatch, tmp_path, runs_of(SanitizerStatus.CLEAN), kept(tmp_path))
    assert not asked and result.points_correctness and not result.notes


def test_counts_only_an_unclean_ending_against_a_clean_reference():
    run = SanitizerRun("memcheck", SanitizerStatus.FINDINGS)  # a finding costs on its own
    assert not reference_tools.counts(run, SanitizerStatus.CLEAN)
    run = SanitizerRun("memcheck", SanitizerStatus.UNAVAILABLE)
    assert not reference_tools.counts(run, SanitizerStatus.CLEAN)
    run = SanitizerRun("memcheck", SanitizerStatus.TIMED_OUT)
    assert reference_tools.counts(run, SanitizerStatus.CLEAN)
    assert not reference_tools.counts(run, None)
    assert not reference_tools.counts(run, SanitizerStatus.TESTS_FAILED)


def test_the_preflight_keeps_the_references_gpu_runners_and_students_are_judged_by_them(
    tmp_path, monkeypatch
):
    from grader.batch import worker as batch_worker
    from grader.engine import lab_grading
    from grader.tests.test_batch_faults import worker_of_gpus

    lab01, lab07 = COURSE.lab("01"), COURSE.lab("07")
    worker, _ = worker_of_gpus(1, tmp_path, monkeypatch)
    seen: list = []

    def grade_lab(lab, build_dir, **kw):
        seen.append(kw["options"].reference_tools)
        r = lab_grading.blank_result(lab, LabStatus.GRADED, "")
        r.points_correctness = r.max_correctness
        return r

    monkeypatch.setattr(lab_grading, "grade_lab", grade_lab)
    monkeypatch.setattr(batch_worker, "install_reference", lambda course, dest: None)
    runner = worker.build / "tests" / lab_grading.runner_target(lab07, "labs")
    runner.parent.mkdir(parents=True)
    runner.write_text("the reference's runner\n")
    worker.preflight(COURSE, [lab01, lab07], progress=lambda *_: None)
    kept_tools = worker.group.reference_tools
    assert kept_tools is not None and seen == [None, None]  # the preflight's own: none
    assert set(kept_tools._runners) == {lab07.id}  # a GPU lab's, not lab 01's
    assert kept_tools._runners[lab07.id].read_text() == "the reference's runner\n"
    worker._grade_lab(lab07, None)
    assert seen[-1] is kept_tools


def test_tools_never_started_run_again_only_while_the_lab_has_points(monkeypatch, tmp_path):
    """A hang under memcheck ends the checker before racecheck and synccheck
    start. They run again in a checker of their own unless the hang
    has cost the lab its points: a hang under each would cost the batch up to
    TOOL_SECONDS each, for nothing."""
    again: list[tuple[str, ...]] = []

    def run_tools(checker, lab_id, runner, iso, tools, **kw):
        again.append(tuple(tools))
        return [SanitizerRun(t, SanitizerStatus.CLEAN) for t in tools]

    monkeypatch.setattr(sanitize, "run_tools", run_tools)

    def hung_under_memcheck() -> list[SanitizerRun]:
        runs = runs_of(SanitizerStatus.TIMED_OUT)
        for r in runs[1:]:
            r.status, r.started = SanitizerStatus.FAILED, False
        return runs

    result, _ = sanitized(monkeypatch, tmp_path, hung_under_memcheck(), kept(tmp_path))
    assert result.points_correctness == 0 and not again
    assert any("racecheck, synccheck: not run" in n for n in result.notes)
    assert set(result.sanitizer) == {"memcheck"}
    # With no reference to judge the hang by, the other tools still run.
    result, _ = sanitized(monkeypatch, tmp_path, hung_under_memcheck(), None)
    assert again == [("racecheck", "synccheck")] and result.points_correctness
    assert result.sanitizer == {t: SanitizerStatus.CLEAN for t in ("racecheck", "synccheck")} | {
        "memcheck": SanitizerStatus.TIMED_OUT
    }


def test_racy_batchs_hiding_student_is_the_racy_lab_behind_a_probe(tmp_path):
    """tests/submissions/racy_batch.py builds its students from lab 08's
    solution: should the solution change under it, this fails here, not on a
    GPU's time. The racy and the hiding lab miss the same barrier, and only
    the hiding one has the probe, inside the fence."""
    from tests.submissions import racy_batch

    racy_batch.make_students(tmp_path)
    path = Path("labs") / racy_batch.LAB / "reduce.cu"
    clean, racy, hiding = (
        (tmp_path / who / path).read_text() for who in ("clean", "racy", "hiding")
    )
    assert clean.count("__syncthreads();") == racy.count("__syncthreads();") + 1
    assert hiding == racy.replace(
        "  __shared__ float partial[kThreads];\n",
        racy_batch.PROBE.lstrip("\n") + "  __shared__ float partial[kThreads];\n",
    )
    fence = hiding.index("// ---- your code here (grid_max) ----")
    assert fence < hiding.index("clock64()") < hiding.index("// ---- end ----")
