"""Grading one lab: the string policy check (fast), the build of the lab's
runner (the student's code), the linked policy check (what the compiled code
calls), the trusted checker driving the runner, the score, and the small cases
again under compute-sanitizer (GPU labs, when it is installed). A student's
`grade` and an instructor's `batch` both grade through grade_lab."""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from .. import labmeta
from ..infra import gpus, toolchain
from ..infra import isolation as isolation_mod
from .sharing.gate import Gate
from ..results import BinaryRun, LabResult
from ..status import LabStatus
from .policy import policy
from . import run_env, sanitize as sanitize_mod
from .policy.lab_policy import built_violations, linked_violations, not_named, reads_build, refuse
from .checker_run import checker_env, merge_runs, run_checker
from .scoring import score
from .sharing.admission import Admit
from .checker_passes import Pass
from .sharing.shared_gpu import ALONE_CALL_SECONDS, ALONE_SECONDS, checker_sharing, hung
from .sharing.reference_tools import ReferenceTools
from .sharing.shared_gpu import sanitize_lab, tests_then_tools

# The timed tests (scoring.is_performance names them the same way), and the rest.
TIMED_TESTS = "*Bandwidth*"
UNTIMED_TESTS = "-*Bandwidth*"
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


def checker_target(lab: labmeta.Lab) -> str:
    return f"checker-{lab.kind}"


def runner_target(lab: labmeta.Lab, impl: str) -> str:
    return f"{lab.id}-runner-{impl}"


def cannot_grade(lab: labmeta.Lab, gpu_count: int, where: str = "this machine") -> str | None:
    """Why `where` (with `gpu_count` GPUs) cannot grade `lab`, in words for the
    student, or None. A machine with no GPU at all is for the callers to report,
    as for every GPU lab."""
    number = lab.id.split("_", 1)[0]
    if lab.needs_gpu and 0 < gpu_count < lab.min_gpus:
        return (
            f"cannot be graded on {where}: lab {number} sums across GPUs and needs "
            f"{lab.min_gpus} or more NVIDIA GPUs with peer access; {where} has "
            f"{gpu_count}. Grade it on a machine with {lab.min_gpus} GPUs or more"
        )
    return None


def new_seed() -> int:
    """The grader chooses every run's seed (and records it): code that runs
    before a test binary's main() cannot pick one that suits it."""
    return secrets.randbits(62)


def blank_result(lab: labmeta.Lab, status: LabStatus, reason: str) -> LabResult:
    return LabResult(
        lab=lab.id,
        title=lab.title,
        status=status,
        reason=reason,
        max_correctness=lab.points_correctness,
        max_performance=lab.points_performance,
        threshold=lab.threshold,
        floor=lab.floor,
    )


def refused(lab: labmeta.Lab, why: str) -> LabResult:
    """A lab of a submission that was refused before anything ran: 0, with the reason."""
    return blank_result(lab, LabStatus.REFUSED, why)


class Phases:
    """Seconds spent in each phase of grading one lab (build, policy, tests,
    sanitizer): what a batch adds up to show where its time went. In a batch
    a GPU lab's tools run in its tests' checker (shared_gpu.tests_then_tools),
    and 'tests' holds both."""

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
    result: LabResult  # scored from the untimed tests; completed by run()
    untimed: BinaryRun  # their run
    checker: Path
    runner: Path
    kw: CheckerOptions  # run_checker's options: impl, timeout, seed, env, ceiling ...

    def run(self, isolation=None, admit: Admit | None = None) -> LabResult:
        """Runs the timed tests and scores the lab on every test; `isolation` as
        for grade_lab (a sandbox cell, or a fresh Contained when None); `admit`
        as for run_checker (gate.TimedTurn.admit: the GPU alone once the
        processes are up), or None where the GPU is already held."""
        own = isolation is None
        iso = isolation_mod.contained() if own else isolation
        started = time.monotonic()
        try:
            timed = run_checker(
                self.checker,
                self.lab.id,
                # A sandbox gives the runner only the variables its command line
                # sets: those of its checker, never the grader's own shell's.
                iso.runner(self.runner, env=checker_env(self.kw.get("env"), True, self.lab.id)),
                gtest_filter=TIMED_TESTS,
                perf=True,
                admit=admit,
                **self.kw,
            )
        finally:
            if own:
                iso.cleanup()
        result = score(self.lab, merge_runs(self.untimed, timed))
        before = self.result
        result.notes = before.notes + [n for n in result.notes if n not in before.notes]
        result.sanitizer, result.timing = before.sanitizer, dict(before.timing)
        result.timing["timed"] = round(time.monotonic() - started, 2)
        return result


def timed_tests_later(lab: labmeta.Lab, result: LabResult) -> bool:
    """Whether a lab graded with its timed tests held back earns a timed run:
    only a lab with every correctness point (a lab that lost them cannot earn
    performance points) and a rubric with performance points."""
    return (
        result.status == LabStatus.GRADED
        and lab.points_performance > 0
        and result.points_correctness == result.max_correctness
    )


def _grade_lab(
    lab: labmeta.Lab,
    build_dir: Path,
    *,
    phases: Phases,
    impl: str = "labs",
    repo: Path = toolchain.REPO,
    timeout: float = 600.0,
    perf: bool = True,
    seed: int | None = None,
    env: dict[str, str] | None = None,
    sanitize: bool = True,
    isolation=None,
    ceiling_gbps: float | None = None,
    gpu_expected: bool | None = None,
    linked_policy: bool = True,
    policy_work: Path | None = None,
    gate: Gate | None = None,
    timed_later: list[TimedPart] | None = None,
    gpu_count: int | None = None,
    where: str = "this machine",
    shared_call_timeout: float | None = None,
    gpu_connections: int | None = None,
    reference_tools: ReferenceTools | None = None,
) -> LabResult:
    """Grades one lab of the tree at `repo` (its `impl` folder) with `build_dir`.

    isolation: where the runner runs: a grader.infra.sandbox.Cell (--sandbox) or a
    grader.infra.isolation.Contained; default: a fresh Contained for this lab.
    gate: the GPU's gate (grader/engine/sharing/gate.py), held shared while a checker runs.
    timed_later: when given (and perf is on), the timed tests do not run here;
    the lab's TimedPart is appended to it, to run later and alone.
    gpu_count, where: the GPUs the checker will see and whose they are (a batch
    worker's: one), for cannot_grade; default: this process's visible GPUs.
    shared_call_timeout: the longest a call may take while `gate` is shared
    (batch --shared-call-timeout); None: call_timeout as usual.
    gpu_connections: CUDA_DEVICE_MAX_CONNECTIONS while `gate` is shared (batch
    --gpu-connections), never in a timed run (checker_env's) nor for a lab whose
    calls span GPUs (its kernels wait on each other's flags); None: CUDA's default.
    reference_tools: the reference's runners a tool's unclean ending is judged
    against (shared_gpu.sanitize_lab); None: such an ending costs nothing."""
    seed = new_seed() if seed is None else seed
    if gpu_expected is None:
        gpu_expected = bool(gpus.visible())
    why_not = cannot_grade(lab, len(gpus.visible()) if gpu_count is None else gpu_count, where)
    if why_not:
        return blank_result(lab, LabStatus.SKIPPED, why_not)
    lab_dir = repo / impl / lab.id
    violations = policy.check_strings(lab, lab_dir) if impl == "labs" else []
    target = runner_target(lab, impl)
    sandboxed = hasattr(isolation, "build")
    check = linked_policy and impl == "labs"
    work = policy_work or build_dir / "policy"
    linked = functools.partial(linked_violations, lab, lab_dir, repo, work, build_dir, target)
    built_check = functools.partial(built_violations, lab, lab_dir, repo, work, build_dir, target)
    later = timed_later is not None and perf
    timed_here = perf and not later
    # The linked check compiles the file again (the build's own command, calls
    # kept visible: engine/policy/build_flags.py) beside the build ("policy" counts
    # only the wait after), and beside the untimed tests too, so a worker does not
    # wait for it (docs/decisions.md, "The linked policy check compiles beside
    # the build"); a timing never has a compiler beside it. Not in the
    # sandbox: there the build comes first, so that code the sandbox refuses
    # is never compiled outside it. What the build made (a GPU lab's runner
    # is the check's compile, and every build's object) is read after the
    # build and before any of the student's code runs, which could rewrite it.
    after_build = check and reads_build(lab, build_dir, target)
    with concurrent.futures.ThreadPoolExecutor(1) as beside:
        early = beside.submit(linked) if check and not sandboxed and not after_build else None
        with phases("build"):
            built = (
                isolation.build(build_dir, target, tree=repo)
                if sandboxed
                else toolchain.build(build_dir, target)
            )
        if not built.ok:  # the check, already running, ends with the pool; its result is dropped
            if built.machine_fault:
                return blank_result(
                    lab,
                    LabStatus.ERROR,
                    "the build failed for the machine's sake, not the code's: "
                    f"{built.machine_fault}",
                )
            result = blank_result(lab, LabStatus.BUILD_FAILED, built.first_errors)
            if violations:
                refuse(result, violations)
            return result
        if check and (early is None or timed_here):
            with phases("policy"):
                violations += early.result() if early is not None else linked()
                violations += built_check(violations)
            early = None
        elif check:
            with phases("policy"):
                read_built = built_check([])
        own = isolation is None
        iso = isolation_mod.contained() if own else isolation
        try:
            runner = build_dir / "tests" / target
            checker = build_dir / "tests" / checker_target(lab)
            kw = CheckerOptions(
                impl=impl,
                timeout=timeout,
                seed=seed,
                env=env,
                ceiling_gbps=ceiling_gbps,
                gpu_expected=gpu_expected and lab.needs_gpu,
                call_timeout=min(60.0, timeout / 2),
            )
            # A run that times (alone, or the preflight's) has checker_env's queues.
            untimed_env = run_env.sharing(env, lab, gate is not None, gpu_connections)
            shared_bound = shared_call_timeout if gate is not None and lab.needs_gpu else None

            def options_for(alone: bool) -> CheckerOptions:
                options = CheckerOptions(**{**kw, "env": env if timed_here else untimed_env})
                if alone:  # it stops every other worker's GPU work (shared_gpu.py)
                    options["timeout"] = min(timeout, ALONE_SECONDS)
                    options["call_timeout"] = min(options["call_timeout"], ALONE_CALL_SECONDS)
                elif shared_bound:
                    options["call_timeout"] = min(options["call_timeout"], shared_bound)
                return options

            def tests(alone: bool, admit: Admit | None) -> BinaryRun:
                options = options_for(alone)
                return run_checker(
                    checker,
                    lab.id,
                    iso.runner(runner, env=checker_env(options["env"], timed_here, lab.id)),
                    perf=timed_here,
                    gtest_filter=UNTIMED_TESTS if later else None,
                    admit=admit,
                    max_timeouts=SHARED_MAX_TIMEOUTS if admit is not None else None,
                    **options,
                )

            # In a batch, a GPU lab's tools run in its tests' checker (shared_gpu.py).
            tools_after = gate is not None and later and sanitize and lab.needs_gpu
            tools_after = tools_after and not lab.spans_gpus and sanitize_mod.available()
            tools: list[sanitize_mod.SanitizerRun] | None = None
            with phases("tests"):
                if tools_after and gate is not None:
                    shared = options_for(False)
                    first = Pass(
                        "tests",
                        iso.runner(runner, env=shared["env"]),
                        gtest_filter=UNTIMED_TESTS,
                        timeout=shared["timeout"],
                        call_timeout=shared["call_timeout"],
                        max_timeouts=SHARED_MAX_TIMEOUTS,
                    )
                    run, rerun, tools = tests_then_tools(
                        gate, lab, checker, runner, iso, first, tests, shared
                    )
                else:
                    run, rerun = checker_sharing(gate if lab.needs_gpu else None, tests)
            result = score(lab, run, perf=perf)
            if rerun:
                result.notes.append(rerun)
            elif shared_bound and hung(run):
                result.notes.append(SHARED_CALL_NOTE.format(seconds=shared_bound))
            note = iso.note()
            if (
                note
                and result.status == LabStatus.GRADED
                and result.points_correctness == 0
                and not (result.first_failure and result.first_failure.hint == "not_implemented")
            ):
                result.notes.append(note)
            if sanitize and lab.spans_gpus and result.status == LabStatus.GRADED:
                # Its GPUs spin on each other's flags inside a call, which a tool
                # that serialises kernel launches can turn into a hang: not run
                # (lab 12's mutants are caught by its exact checks instead).
                result.sanitizer["all"] = "unavailable"
                result.notes.append(SPANS_GPUS_SANITIZER_NOTE)
            elif (
                sanitize
                and lab.needs_gpu
                and result.status == LabStatus.GRADED
                and result.points_correctness
            ):
                with phases("sanitizer"):
                    sanitize_lab(
                        lab,
                        checker,
                        runner,
                        iso,
                        result,
                        gate=gate,
                        env=untimed_env,
                        seed=seed,
                        ran=tools,
                        reference=reference_tools,
                    )
        finally:
            if own:
                iso.cleanup()
        if early is not None:
            with phases("policy"):
                violations += early.result()
                violations += not_named(read_built, violations)
    if violations:
        refuse(result, violations)
    elif later and timed_later is not None and timed_tests_later(lab, result):
        timed_later.append(TimedPart(lab, result, run, checker, runner, kw))
    elif later and result.status == LabStatus.GRADED and lab.points_performance > 0:
        result.notes.append(
            "bandwidth not measured: it is timed once every correctness test passes"
        )
    return result
