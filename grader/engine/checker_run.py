"""Run a lab's checker against a runner and keep every result it produced.

The checker (tests/checker-<kind>, built from trusted sources only) starts
the runner (the lab's code) itself and reports each test as one JSON line on
a file descriptor it inherits: an unlinked temporary file that only this
process and the checker hold. Nothing the runner prints, writes or exits with
is read as a result; the checker's stdout is kept only as a log for people.

The grader knows each checker's test list (`--gtest_list_tests`, from the
trusted binary) and marks every test without a result as failed ("not_run"):
a run that stops early, for whatever reason, cannot skip a test into a pass.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import tempfile
from pathlib import Path

from .. import labmeta
from ..infra import proc
from ..infra.runner import RunnerSpec
from ..results import BinaryRun, CaseResult
from ..status import CaseStatus, RunStatus
from .sharing import checker_service
from .sharing.admission import Admission, Admit

SKIP_EXIT = 77


@functools.lru_cache(maxsize=64)
def _listing(checker: str, mtime: float, gtest_filter: str | None) -> tuple[str, ...]:
    args = [checker, "--gtest_list_tests"]
    if gtest_filter:
        args.append(f"--gtest_filter={gtest_filter}")
    done = proc.run(args, timeout=120)
    if done.code != 0:
        raise RuntimeError(
            f"{checker} --gtest_list_tests failed: {done.describe()}: {done.output[-500:]}"
        )
    tests, suite = [], ""
    for line in done.output.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.strip()  # "Suite." (a parameterised one: "Prefix/Suite.")
        else:
            tests.append(suite + line.split("#")[0].strip())
    return tuple(tests)


# The queues a CUDA context opens: batch --gpu-connections sets it for the runs
# that share a GPU (run_env.py), and the checker passes it on to the runner.
CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"

# The queues of a timed run's contexts (CUDA makes 8). The driver makes one
# context at a time for the whole machine, and an 11-lab student's timed turn
# starts 20 processes while the GPU waits for them: with one queue they are up
# in a third of the time, and no lab's measured fraction of the copy moves
# beyond its spread (see docs/decisions.md, "One queue per context for timed
# runs"). A lab whose calls span GPUs keeps CUDA's: its kernels wait on each
# other's flags.
TIMED_CONNECTIONS = 1


@functools.lru_cache(maxsize=None)
def _times_with_one_queue(lab_id: str) -> bool:
    try:
        lab = labmeta.load().lab(lab_id)
    except KeyError:
        return False  # not a lab of the course (a test's stand-in): CUDA's default
    return lab.needs_gpu and not lab.spans_gpus


def checker_env(
    env: dict[str, str] | None, perf: bool, lab_id: str | None = None
) -> dict[str, str]:
    """The environment of a checker and, through it, its runner: `env` (None:
    the grader's own) with the timed tests on or off (LAB_SKIP_PERF). A run
    that times does it with TIMED_CONNECTIONS queues a context where `lab_id`
    names a lab whose calls stay on one GPU, else with CUDA's default, whatever
    the instructor's shell exported: every timed run, a batch's, `grade`'s,
    `calibrate`'s."""
    full = dict(env if env is not None else os.environ)
    if perf:
        full.pop("LAB_SKIP_PERF", None)
        full.pop(CONNECTIONS, None)
        if lab_id is not None and _times_with_one_queue(lab_id):
            full[CONNECTIONS] = str(TIMED_CONNECTIONS)
    else:
        full["LAB_SKIP_PERF"] = "1"
    return full


def list_tests(checker: Path, gtest_filter: str | None = None) -> list[str]:
    """The tests this checker runs (with this filter), as Suite.Test names."""
    return list(_listing(str(checker), os.stat(checker).st_mtime, gtest_filter))


def parse_stream(text: str) -> tuple[list[CaseResult], str | None, dict]:
    """The checker's result stream -> (finished cases, the test running when it
    stopped, the run's own events: seed, runner exits, an abort)."""
    cases: list[CaseResult] = []
    running: str | None = None
    events: dict = {"runner_exits": []}
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the checker was killed
        if not isinstance(ev, dict):
            continue
        kind = ev.get("event")
        if kind == "start":
            running = ev.get("test")
        elif kind == "end":
            try:
                cases.append(
                    CaseResult(
                        ev["test"],
                        CaseStatus(ev["result"]),
                        float(ev.get("time_ms", 0)),
                        {str(k): str(v) for k, v in ev.get("properties", {}).items()},
                        [str(f) for f in ev.get("failures", [])],
                    )
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
            running = None
        elif kind == "run":
            events["seed"] = str(ev.get("seed", ""))
        elif kind == "runner_exit":
            events["runner_exits"].append(ev)
        elif kind == "abort":
            events["abort"] = str(ev.get("reason", ""))
    return cases, running, events


@dataclasses.dataclass(frozen=True)
class CheckerOptions:
    """How one run of a checker goes (run_checker; checker_passes.run_passes
    reads the same). One frozen value, so that a caller states a run's options
    once and derives a variant with dataclasses.replace, rather than
    forwarding a dozen arguments one by one through every layer."""

    impl: str = "labs"
    timeout: float = 600.0
    seed: int | None = None
    gtest_filter: str | None = None
    perf: bool = True  # the timed tests on (checker_env)
    env: dict[str, str] | None = None  # None: the grader's own
    ceiling_gbps: float | None = None
    call_timeout: float | None = None
    max_timeouts: int | None = None
    # Whether the grader itself found a GPU: a checker that says "no GPU"
    # (exit 77) where the grader found one is the machine's fault.
    gpu_expected: bool | None = None
    log_limit: int = 16 << 20
    # Each case makes its first call only (a sanitizer's run: sanitize.FIRST_CALL_ONLY).
    first_call_only: bool = False


def checker_args(
    checker: Path, lab_id: str, runner: RunnerSpec, options: CheckerOptions
) -> list[str]:
    """The checker's command line (without --result-fd) for a run with `options`."""
    o = options
    args = [str(checker), f"--lab={lab_id}", f"--impl={o.impl}"]
    args += [f"--runner-prefix={a}" for a in runner.prefix]
    args.append(f"--runner={runner.binary}")
    if runner.user:
        args.append(f"--runner-user={runner.user}")
    if runner.workdir is not None:
        args.append(f"--runner-workdir={runner.workdir}")
    if o.seed is not None:
        args.append(f"--seed={o.seed}")
    if o.gtest_filter:
        args.append(f"--gtest_filter={o.gtest_filter}")
    if o.ceiling_gbps:
        args.append(f"--ceiling-gbps={o.ceiling_gbps}")
    if o.call_timeout:
        args.append(f"--call-timeout={o.call_timeout:g}")
    if o.max_timeouts:
        args.append(f"--max-timeouts={o.max_timeouts}")
    if o.first_call_only:
        args.append("--first-call-only")
    return args


def run_checker(
    checker: Path,
    lab_id: str,
    runner: RunnerSpec,
    options: CheckerOptions = CheckerOptions(),
    admit: Admit | None = None,
) -> BinaryRun:
    """Runs every test of `checker` (or those matching options.gtest_filter)
    against the runner and returns every result; tests that produced none are
    'not_run'. admit: what the run must hold once its processes are up and
    before its first test (a GPU's run slot: admission.py); its wait is not
    run time."""
    checker = Path(checker)
    missing = missing_run(checker, runner)
    if missing is not None:
        return missing
    o = options
    expected = list_tests(checker, o.gtest_filter)
    done, text = launch(
        checker_args(checker, lab_id, runner, o),
        timeout=o.timeout,
        env=checker_env(o.env, o.perf, lab_id),
        log_limit=o.log_limit,
        admit=admit,
        background=not o.perf,  # an untimed run yields the CPU to a timed one
    )
    return judge(
        Ending.of(done),
        text,
        expected,
        checker=checker,
        seed=o.seed,
        gpu_expected=o.gpu_expected,
        timeout=o.timeout,
    )


def missing_run(checker: Path, runner: RunnerSpec) -> BinaryRun | None:
    """A run that cannot start, for want of the checker or the runner."""
    if not os.access(checker, os.X_OK):
        return BinaryRun(str(checker), RunStatus.MISSING, reason=f"{checker} was not built")
    if not os.access(runner.binary, os.X_OK) and not runner.prefix:
        return BinaryRun(str(checker), RunStatus.MISSING, reason=f"{runner.binary} was not built")
    return None


def launch(
    args: list[str],
    *,
    timeout: float,
    env: dict[str, str],
    log_limit: int,
    admit: Admit | None,
    tail: int = 20000,
    pass_seconds: tuple[float, ...] = (),
    background: bool = False,
) -> tuple[proc.Finished, str]:
    """Runs the checker (args, without --result-fd) and returns how it ended
    and its result stream. pass_seconds: with `admit`, each pass's own limit
    (Admission's), `timeout` the first's. background: an untimed run, at the
    lowest CPU priority (proc.BACKGROUND_NICE). A kept checker runs it where
    the thread keeps or borrows them (checker_service.for_run)."""
    admission = Admission(admit, pass_seconds) if admit is not None else None
    with tempfile.TemporaryFile() as results, contextlib.ExitStack() as cleanup:
        kept = cleanup.enter_context(checker_service.for_run(args[0], env, background))
        if admission is not None:
            cleanup.callback(admission.close)
        fds = (results.fileno(), *(admission.child_fds if admission else ()))
        on_start = admission.started if admission else None
        paused = admission.paused if admission else None
        if kept is not None:
            done = kept.run(
                args[1:], fds, timeout=timeout, output_limit=log_limit, tail=tail,
                on_start=on_start, paused=paused,
            )  # fmt: skip
        else:
            more = [admission.argument] if admission is not None else []
            done = proc.run(
                [*args, *more, f"--result-fd={results.fileno()}"],
                timeout=timeout, env=env, background=background,
                options=proc.RunOptions(output_limit=log_limit, tail=tail, pass_fds=fds,
                                        on_start=on_start, paused=paused),
            )  # fmt: skip
        results.seek(0)
        return done, results.read(64 << 20).decode(errors="replace")


@dataclasses.dataclass
class Ending:
    """How the checker's run (or one pass of it: checker_passes.py) ended."""

    code: int | None
    timed_out: bool = False
    over_limit: bool = False
    output: str = ""
    how: str = ""

    @classmethod
    def of(cls, done: proc.Finished) -> Ending:
        return cls(done.code, done.timed_out, done.over_limit, done.output, done.describe())


def judge(
    ending: Ending,
    text: str,
    expected: list[str],
    *,
    checker: Path,
    seed: int | None,
    gpu_expected: bool | None,
    timeout: float,
) -> BinaryRun:
    """The run's results from its result stream `text` and how it ended; each
    expected test without a result is 'not_run'."""
    run = BinaryRun(binary=str(checker), status=RunStatus.COMPLETED)
    run.exit_code = ending.code
    run.output_tail = ending.output[-6000:]
    cases, running, events = parse_stream(text)
    run.properties["seed"] = events.get("seed", "" if seed is None else str(seed))
    run.runner_exits = events["runner_exits"]
    if ending.code == SKIP_EXIT and not cases:
        skip_line = next((l for l in ending.output.splitlines() if l.startswith("SKIP")), None)
        if gpu_expected:
            run.status = RunStatus.CHECKER_FAILED
            run.reason = "the checker found no usable GPU although this machine has one: " + (
                skip_line or ending.output[-300:]
            )
        else:
            run.status = RunStatus.SKIPPED
            run.reason = skip_line or "skipped"
        return run
    run.cases = cases
    if ending.timed_out:
        run.status, run.reason = (
            RunStatus.TIMED_OUT,
            f"the lab's tests did not finish in {timeout:.0f} s",
        )
        if running is not None:
            run.cases.append(
                CaseResult(
                    running,
                    CaseStatus.TIMED_OUT,
                    failures=[
                        f"{running}: stopped when the whole lab ran out of time ({timeout:.0f} s)"
                    ],
                )
            )
    elif ending.over_limit:
        run.status, run.reason = RunStatus.CHECKER_FAILED, "the checker's log passed its size limit"
    elif "abort" in events:
        run.status, run.reason = RunStatus.CHECKER_FAILED, events["abort"]
    elif ending.code not in (0, 1):
        # gtest exits 0 or 1; anything else is the checker's own failure (the
        # lab's code runs in another process, whose crashes are test results).
        run.status = RunStatus.CHECKER_FAILED
        run.reason = f"the checker {ending.how}: {ending.output[-400:].strip()}"
    if any(c.properties.get("fail_hint") == "checker_error" for c in run.cases):
        run.status = RunStatus.CHECKER_FAILED
        run.reason = next(
            c.failures[0]
            for c in run.cases
            if c.properties.get("fail_hint") == "checker_error" and c.failures
        )
    finished = {c.name for c in run.cases}
    why = run.reason or "the checker stopped before it"
    for name in expected:
        if name not in finished:
            run.cases.append(
                CaseResult(name, CaseStatus.NOT_RUN, failures=[f"{name}: not run ({why})"])
            )
    return run


def merge_runs(first: BinaryRun, second: BinaryRun) -> BinaryRun:
    """Two runs of one checker over disjoint tests (another --gtest_filter, the
    same seed) as one: every case of both; the status, reason and exit code of
    the first that did not complete."""
    merged = BinaryRun(
        binary=first.binary,
        status=first.status,
        exit_code=first.exit_code,
        reason=first.reason,
        output_tail=first.output_tail + second.output_tail[-3000:],
        properties=first.properties,
        cases=first.cases + second.cases,
        runner_exits=first.runner_exits + second.runner_exits,
    )
    if first.status == RunStatus.COMPLETED and second.status != RunStatus.COMPLETED:
        merged.status, merged.reason = second.status, second.reason
        merged.exit_code = second.exit_code
    return merged
