"""Grading one lab: a context (LabRun) and an explicit, ordered list of named
steps (STEPS), each a small function of the context, as nbgrader lists its
preprocessors: the string policy check (fast), the build of the lab's runner
(the student's code), the linked policy check (what the compiled code calls),
the trusted checker driving the runner, the score, the small cases again
under compute-sanitizer (GPU labs, when it is installed), and what is held
back or refused. A student's `grade` and an instructor's `batch` both grade
through grade_lab, with a GradeOptions.

The rule: what the caller decides is one frozen GradeOptions; what a run
accumulates is the LabRun; which steps run is chosen in one place
(steps_for). A new phase is then one function and one entry in STEPS, and a
new choice one field, never another parameter forwarded through every caller
and another flag steering a long function's branches."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path

from .. import labmeta
from ..infra import gpus, toolchain
from ..infra import isolation as isolation_mod
from ..results import BinaryRun, LabResult
from ..status import LabStatus
from .policy import policy
from . import sanitize as sanitize_mod
from .policy.lab_policy import built_violations, linked_violations, not_named, reads_build, refuse
from .checker_run import CheckerOptions, checker_env, run_checker
from .scoring import score
from .sharing.admission import Admit
from .checker_passes import Pass
from .sharing.shared_gpu import ALONE_CALL_SECONDS, ALONE_SECONDS, checker_sharing, hung
from .sharing.shared_gpu import ToolsSetting, sanitize_lab, tests_then_tools
from .lab_context import GradeOptions, LabRun
from .lab_parts import (
    TIMED_TESTS,
    UNTIMED_TESTS,
    Phases,
    TimedPart,
    blank_result,
    cannot_grade,
    checker_target,
    new_seed,
    refused,
    runner_target,
    timed_tests_later,
)

# What callers use of one lab's grading; lab_parts.py holds the parts its
# steps and a batch share, named here too so that callers have one module.
__all__ = [
    "GradeOptions",
    "LabRun",
    "Phases",
    "STEPS",
    "TIMED_TESTS",
    "TimedPart",
    "UNTIMED_TESTS",
    "blank_result",
    "cannot_grade",
    "checker_target",
    "grade_lab",
    "new_seed",
    "refused",
    "runner_target",
    "score",
    "steps_for",
    "timed_tests_later",
]

SHARED_CALL_NOTE = (
    "a call may take at most {seconds:g} s while other students' tests share the GPU "
    "(the instructor's batch --shared-call-timeout): one of yours took longer and was "
    "stopped as hung"
)
# Hung calls a run that shares the GPU may make before the rest of its tests
# are not run (the checker's --max-timeouts; 2 otherwise): the first already
# costs every correctness point, and a spinning kernel takes its time slices
# from every other run on the GPU for each further hang (see
# docs/decisions.md, "One hung call ends a shared run's tests").
SHARED_MAX_TIMEOUTS = 1
SPANS_GPUS_SANITIZER_NOTE = (
    "compute-sanitizer is not run on a lab whose calls span GPUs: its GPUs wait for each other"
)


Step = Callable[[LabRun], LabResult | None]


def check_gradable(ctx: LabRun) -> LabResult | None:
    """A lab this machine cannot grade (too few GPUs) ends here, skipped."""
    o = ctx.options
    count = len(gpus.visible()) if o.gpu_count is None else o.gpu_count
    why_not = cannot_grade(ctx.lab, count, o.where)
    return blank_result(ctx.lab, LabStatus.SKIPPED, why_not) if why_not else None


def check_strings(ctx: LabRun) -> None:
    """The string policy check of the student's files (fast; before the build)."""
    ctx.violations = policy.check_strings(ctx.lab, ctx.lab_dir)


def start_linked_check(ctx: LabRun) -> None:
    """The linked check compiles the file again (the build's own command, calls
    kept visible: engine/policy/build_flags.py) beside the build ("policy"
    counts only the wait after), and beside the untimed tests too, so a
    worker does not wait for it (docs/decisions.md, "The linked policy check
    compiles beside the build"); a timing never has a compiler beside it. Not
    in the sandbox: there the build comes first, so that code the sandbox
    refuses is never compiled outside it. What the build made (a GPU lab's
    runner is the check's compile, and every build's object) is read after
    the build and before any of the student's code runs, which could rewrite it."""
    after_build = reads_build(ctx.lab, ctx.build_dir, ctx.target)
    # Left with the steps, the pool waits for a check still running (a failed
    # build drops its result).
    beside = ctx.stack.enter_context(concurrent.futures.ThreadPoolExecutor(1))
    if not ctx.sandboxed and not after_build:
        ctx.early = beside.submit(_linked, ctx)


def build(ctx: LabRun) -> LabResult | None:
    """The lab's runner, in the sandbox when there is one. A failed build ends
    the lab: the machine's fault (an error), or the code's (with the string
    check's violations)."""
    with ctx.phases("build"):
        built = (
            ctx.options.isolation.build(ctx.build_dir, ctx.target, tree=ctx.options.repo)
            if ctx.sandboxed
            else toolchain.build(ctx.build_dir, ctx.target)
        )
    if built.ok:
        return None
    if built.machine_fault:
        return blank_result(
            ctx.lab,
            LabStatus.ERROR,
            f"the build failed for the machine's sake, not the code's: {built.machine_fault}",
        )
    result = blank_result(ctx.lab, LabStatus.BUILD_FAILED, built.first_errors)
    if ctx.violations:
        refuse(result, ctx.violations)
    return result


def _linked(ctx: LabRun) -> list[policy.Violation]:
    return linked_violations(*ctx.policy_args())


def _built(ctx: LabRun, found: list[policy.Violation]) -> list[policy.Violation]:
    return built_violations(*ctx.policy_args(), found)


def check_linked(ctx: LabRun) -> None:
    """The linked check's verdict now, where it did not run beside the build
    or the tests time here; else only what the build made is read now, and
    the check's verdict waits for finish_linked_check."""
    with ctx.phases("policy"):
        if ctx.early is None or ctx.options.times_here:
            ctx.violations += ctx.early.result() if ctx.early is not None else _linked(ctx)
            ctx.violations += _built(ctx, ctx.violations)
            ctx.early = None
        else:
            ctx.read_built = _built(ctx, [])


def open_isolation(ctx: LabRun) -> None:
    """Where the runner runs: the caller's sandbox cell, or a fresh Contained
    for this lab, cleaned up by close_isolation (or however the steps end)."""
    own = ctx.options.isolation is None
    ctx.iso = isolation_mod.contained() if own else ctx.options.isolation
    ctx.stack.enter_context(ctx.iso_stack)
    if own:
        ctx.iso_stack.callback(ctx.iso.cleanup)


def _options_for(ctx: LabRun, alone: bool) -> CheckerOptions:
    """The untimed run's checker options: alone, it stops every other worker's
    GPU work (shared_gpu.py), so it is bounded; sharing, its calls are."""
    o = ctx.options
    options = ctx.checker_options()
    options = dataclasses.replace(options, env=o.env if o.times_here else ctx.untimed_env)
    call = min(60.0, o.timeout / 2)
    if alone:
        return dataclasses.replace(
            options,
            timeout=min(o.timeout, ALONE_SECONDS),
            call_timeout=min(call, ALONE_CALL_SECONDS),
        )
    bound = ctx.shared_bound
    return dataclasses.replace(options, call_timeout=min(call, bound)) if bound else options


def _tests(ctx: LabRun, alone: bool, admit: Admit | None) -> BinaryRun:
    """One checker run of the lab's tests (the untimed ones where the timed
    wait for later); `admit` as for run_checker."""
    o = ctx.options
    options = _options_for(ctx, alone)
    options = dataclasses.replace(
        options,
        perf=o.times_here,
        gtest_filter=UNTIMED_TESTS if o.times_later else None,
        max_timeouts=SHARED_MAX_TIMEOUTS if admit is not None else None,
    )
    spec = ctx.iso.runner(ctx.runner, env=checker_env(options.env, o.times_here, ctx.lab.id))
    return run_checker(ctx.checker, ctx.lab.id, spec, options=options, admit=admit)


def _tools_after_tests(ctx: LabRun) -> bool:
    """In a batch, a GPU lab's tools run in its tests' checker (shared_gpu.py)."""
    o, lab = ctx.options, ctx.lab
    tools_after = o.gate is not None and o.times_later and o.sanitize and lab.needs_gpu
    return tools_after and not lab.spans_gpus and sanitize_mod.available()


def run_tests(ctx: LabRun) -> None:
    """The trusted checker drives the runner, through the GPU's gate."""
    tests = functools.partial(_tests, ctx)
    gate = ctx.options.gate
    with ctx.phases("tests"):
        if _tools_after_tests(ctx) and gate is not None:
            shared = _options_for(ctx, False)
            first = Pass(
                "tests",
                ctx.iso.runner(ctx.runner, env=shared.env),
                gtest_filter=UNTIMED_TESTS,
                timeout=shared.timeout,
                call_timeout=shared.call_timeout,
                max_timeouts=SHARED_MAX_TIMEOUTS,
            )
            ctx.run, ctx.rerun, ctx.tools = tests_then_tools(
                gate, ctx.lab, ctx.checker, ctx.runner, ctx.iso, first, tests, shared
            )
        else:
            ctx.run, ctx.rerun = checker_sharing(gate if ctx.lab.needs_gpu else None, tests)


def score_tests(ctx: LabRun) -> None:
    """The score of the tests' run, with what the student should know of it."""
    assert ctx.run is not None
    result = score(ctx.lab, ctx.run, perf=ctx.options.perf)
    bound = ctx.shared_bound
    if ctx.rerun:
        result.notes.append(ctx.rerun)
    elif bound and hung(ctx.run):
        result.notes.append(SHARED_CALL_NOTE.format(seconds=bound))
    note = ctx.iso.note()
    if (
        note
        and result.status == LabStatus.GRADED
        and result.points_correctness == 0
        and not (result.first_failure and result.first_failure.hint == "not_implemented")
    ):
        result.notes.append(note)
    ctx.result = result


def sanitize(ctx: LabRun) -> None:
    """The small cases under compute-sanitizer's tools, for a GPU lab that
    earned correctness points."""
    result, lab = ctx.result, ctx.lab
    assert result is not None
    if lab.spans_gpus and result.status == LabStatus.GRADED:
        # Its GPUs spin on each other's flags inside a call, which a tool
        # that serialises kernel launches can turn into a hang: not run
        # (lab 12's mutants are caught by its exact checks instead).
        result.sanitizer["all"] = "unavailable"
        result.notes.append(SPANS_GPUS_SANITIZER_NOTE)
    elif lab.needs_gpu and result.status == LabStatus.GRADED and result.points_correctness:
        o = ctx.options
        setting = ToolsSetting(o.gate, ctx.untimed_env, ctx.seed, o.reference_tools)
        with ctx.phases("sanitizer"):
            sanitize_lab(lab, ctx.checker, ctx.runner, ctx.iso, result, setting, ran=ctx.tools)


def close_isolation(ctx: LabRun) -> None:
    """The fresh Contained's folder goes once the lab's code has run."""
    ctx.iso_stack.close()


def finish_linked_check(ctx: LabRun) -> None:
    """The verdict of the linked check that ran beside the tests."""
    if ctx.early is not None:
        with ctx.phases("policy"):
            ctx.violations += ctx.early.result()
            ctx.violations += not_named(ctx.read_built or [], ctx.violations)


def settle(ctx: LabRun) -> None:
    """A lab that broke the policy is refused; one whose timed tests wait is
    held back (TimedPart) when it may earn performance points, else told why
    it has no bandwidth."""
    o, lab, result = ctx.options, ctx.lab, ctx.result
    assert result is not None and ctx.run is not None
    if ctx.violations:
        refuse(result, ctx.violations)
    elif o.times_later and o.timed_later is not None and timed_tests_later(lab, result):
        part = TimedPart(lab, result, ctx.run, ctx.checker, ctx.runner, ctx.checker_options())
        o.timed_later.append(part)
    elif o.times_later and result.status == LabStatus.GRADED and lab.points_performance > 0:
        result.notes.append(
            "bandwidth not measured: it is timed once every correctness test passes"
        )


# One lab's grading, in order. A new phase is one function of the context and
# one entry here; what the caller decided takes steps out in steps_for alone.
STEPS: tuple[Step, ...] = (
    check_gradable,
    check_strings,
    start_linked_check,
    build,
    check_linked,
    open_isolation,
    run_tests,
    score_tests,
    sanitize,
    close_isolation,
    finish_linked_check,
    settle,
)


def steps_for(options: GradeOptions) -> tuple[Step, ...]:
    """STEPS less those the caller's options turn off: the policy checks read
    only the student's folder (`labs`), the linked one only where asked for,
    and the tools only where `sanitize` is on."""
    off: set[Step] = set()
    if options.impl != "labs":
        off |= {check_strings}
    if not (options.linked_policy and options.impl == "labs"):
        off |= {start_linked_check, check_linked, finish_linked_check}
    if not options.sanitize:
        off.add(sanitize)
    return tuple(step for step in STEPS if step not in off)


def run_steps(ctx: LabRun, steps: tuple[Step, ...]) -> LabResult:
    """The steps in order; a step that returns a result ends the lab with it.
    Whatever the steps opened closes however they end."""
    with ctx.stack:
        for step in steps:
            ended = step(ctx)
            if ended is not None:
                return ended
    assert ctx.result is not None
    return ctx.result


def grade_lab(
    lab: labmeta.Lab, build_dir: Path, options: GradeOptions = GradeOptions()
) -> LabResult:
    """Grades one lab with `build_dir` as `options` say (steps_for) and records
    how long each phase took."""
    phases = Phases()
    seed = new_seed() if options.seed is None else options.seed
    gpu_expected = bool(gpus.visible()) if options.gpu_expected is None else options.gpu_expected
    ctx = LabRun(lab, build_dir, options, phases, seed, gpu_expected)
    result = run_steps(ctx, steps_for(options))
    result.timing = phases.seconds
    return result
