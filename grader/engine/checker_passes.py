"""One checker process for several passes of tests, each against a runner
started anew under a wrapping of its own, with its own filter, time limit and
hang budget (tests/support/checker_passes.hpp): compute-sanitizer's tools,
which each had a checker of their own, and in a batch the lab's untimed tests
before them (shared_gpu.tests_then_tools).

Why: the machine serves a process's start and its CUDA context one at a time
with every other's (see docs/decisions.md, "Fewer process starts"), and a correct GPU lab started five checkers, each with a runner: its tests,
three tools and its timed tests. Three tools in one checker start one checker
where they started three; the tests in the same one, one where they started two.

Each pass is judged as the run of a checker of its own would be (checker_run.judge),
from its part of the result stream and of the checker's output: a pass that
ended before the last is a completed run; the last pass that started ends as
the process did (timed out, killed, aborted); a pass that never started gets
the verdict of the one that stopped the process, or, when the process ended
cleanly without it, a checker failure. Through a GPU's gate, the checker asks
before each later pass starts its runner (admission.py's 'n'): between two
passes the run leaves the GPU's shared side, and a drain for a timed run may
pass there, as between two checkers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..infra.runner import RunnerSpec
from ..results import BinaryRun, CaseResult
from ..status import CaseStatus, RunStatus
from .sharing.admission import Admit
from .checker_run import (
    CheckerOptions,
    Ending,
    checker_args,
    checker_env,
    judge,
    launch,
    list_tests,
    missing_run,
)

# The checker's line before each pass (checker_passes.hpp); the runner's own
# lines are echoed behind "  | " and cannot start one.
_MARK = re.compile(r"^\[checker pass (\d+)/\d+: [^\]\n]*\]$", re.MULTILINE)


# A run's property when its pass never started (_never_started).
NOT_STARTED = "pass_not_started"


@dataclass(frozen=True)
class Pass:
    name: str
    runner: RunnerSpec  # the whole wrapping of this pass's runner
    first_call_only: bool = False
    gtest_filter: str | None = None  # None: run_passes' options.gtest_filter
    timeout: float | None = None  # the pass's own limit; None: options.timeout
    call_timeout: float | None = None  # None: run_passes' options.call_timeout
    max_timeouts: int | None = None  # None: run_passes' options.max_timeouts


def pass_args(passes: list[Pass]) -> tuple[RunnerSpec, list[str]]:
    """The runner every pass shares (its common prefix) and each pass's
    arguments (--pass, --pass-prefix, --pass-first-call-only)."""
    first = passes[0].runner
    for p in passes:
        if (p.runner.binary, p.runner.user, p.runner.workdir) != (
            first.binary,
            first.user,
            first.workdir,
        ):
            raise ValueError(f"pass {p.name} runs another runner than pass {passes[0].name}")
    common = list(os.path.commonprefix([p.runner.prefix for p in passes]))
    args = []
    for p in passes:
        args.append(f"--pass={p.name}")
        args += [f"--pass-prefix={a}" for a in p.runner.prefix[len(common) :]]
        if p.first_call_only:
            args.append("--pass-first-call-only")
        if p.gtest_filter:
            args.append(f"--pass-filter={p.gtest_filter}")
        if p.call_timeout:
            args.append(f"--pass-call-timeout={p.call_timeout:g}")
        if p.max_timeouts:
            args.append(f"--pass-max-timeouts={p.max_timeouts}")
    return RunnerSpec(first.binary, common, first.user, first.workdir), args


def run_passes(
    checker: Path,
    lab_id: str,
    passes: list[Pass],
    options: CheckerOptions,
    admit: Admit | None = None,
    later_if_first_passed: bool = False,
) -> list[BinaryRun]:
    """Every pass's tests (untimed) in one checker; one run per pass, in order.
    `options` hold what every pass shares (a pass's own fields replace its
    gtest_filter, timeout, call_timeout and max_timeouts); the runs are untimed,
    so its perf, ceiling_gbps and first_call_only are not read. Each pass's
    time limit (its own, or options.timeout) runs from its start where `admit`
    lets the checker say so ('n'), else the limits add up.
    later_if_first_passed: the later passes run only when every test of the
    first passed (the checker's --later-passes-if-first-passed); when one
    failed, only the first pass's run is returned."""
    checker = Path(checker)
    common, extra = pass_args(passes)
    missing = missing_run(checker, common)
    if missing is not None:
        return [missing for _ in passes]
    timeout, seed = options.timeout, options.seed
    expected = [list_tests(checker, p.gtest_filter or options.gtest_filter) for p in passes]
    limits = tuple(p.timeout or timeout for p in passes)
    shared = dataclasses.replace(options, ceiling_gbps=None, first_call_only=False)
    args = checker_args(checker, lab_id, common, shared)
    if later_if_first_passed:
        extra.append("--later-passes-if-first-passed")
    done, text = launch(
        args + extra,
        timeout=limits[0] if admit is not None else sum(limits),
        env=checker_env(options.env, perf=False),
        log_limit=options.log_limit,
        admit=admit,
        tail=60000 * len(passes),
        pass_seconds=limits,
        background=True,  # untimed: yields the CPU to a timed run
    )
    ending = Ending.of(done)
    streams = split_stream(text, len(passes))
    outputs = split_output(ending.output, len(passes))

    def verdict(i: int, part: Ending, stream: str) -> BinaryRun:
        # Without admission a pass that ran out of time ran out of the sum.
        limit = limits[i] if admit is not None else sum(limits)
        return judge(
            part,
            stream,
            expected[i],
            checker=checker,
            seed=seed,
            gpu_expected=options.gpu_expected,
            timeout=limit,
        )

    started = len(streams)
    if started == 0:  # stopped before its first pass (no GPU, a bad argument)
        return [verdict(i, ending, text) for i in range(len(passes))]
    runs = []
    for i, stream in enumerate(streams):
        last = i == started - 1
        part = (
            dataclasses.replace(ending, output=outputs[i])
            if last
            else Ending(0, how="exit code 0", output=outputs[i])
        )
        runs.append(verdict(i, part, stream))
    if later_if_first_passed and started == 1 and not all_passed(runs[0]):
        return runs
    stopped = runs[-1]
    for i in range(started, len(passes)):
        runs.append(_never_started(passes[i], stopped, expected[i], checker))
    return runs


def all_passed(run: BinaryRun) -> bool:
    """Did every test of a run pass (or skip), as the checker's exit code 0 says?"""
    return run.status == RunStatus.COMPLETED and bool(run.cases) and all(c.ok for c in run.cases)


def _never_started(p: Pass, stopped: BinaryRun, expected: list[str], checker: Path) -> BinaryRun:
    """A pass the checker never reached: why the pass before it stopped the
    process, or the checker's fault when it ended cleanly without it."""
    status, reason = stopped.status, stopped.reason
    if status in (RunStatus.COMPLETED, RunStatus.SKIPPED):
        status, reason = RunStatus.CHECKER_FAILED, "the checker ended before it"
    why = f"not run: {reason} in the pass before {p.name}"
    return BinaryRun(
        str(checker),
        status,
        stopped.exit_code,
        why,
        {**stopped.properties, NOT_STARTED: "1"},
        [CaseResult(n, CaseStatus.NOT_RUN, failures=[f"{n}: {why}"]) for n in expected],
    )


def split_stream(text: str, passes: int) -> list[str]:
    """The result stream's part of each pass that started, each behind the
    lines before the first pass (the run's seed)."""
    head: list[str] = []
    parts: list[list[str]] = []
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            ev = None
        if isinstance(ev, dict) and ev.get("event") == "pass" and len(parts) < passes:
            parts.append([])
        (parts[-1] if parts else head).append(line)
    return ["\n".join(head + part) for part in parts]


def split_output(output: str, passes: int) -> list[str]:
    """The checker's output of each pass (everything before the first pass's
    line goes with each), "" for a pass whose line is not in `output`."""
    marks = {int(m.group(1)) - 1: m.start() for m in _MARK.finditer(output)}
    head = output[: min(marks.values())] if marks else output
    parts = []
    for i in range(passes):
        if i not in marks:
            parts.append("")
            continue
        later = [s for j, s in marks.items() if j > i]
        parts.append(head + output[marks[i] : min(later) if later else len(output)])
    return parts
