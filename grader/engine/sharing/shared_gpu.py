"""A lab's checker runs on a GPU that other students' runs share (`batch
--jobs-per-gpu`), and what is done when the GPU was full.

A student's code may allocate most of the GPU's memory (the policy check
refuses the allocation calls, policy.toml's `device_memory`, but a batch may
run with that check off, and an honest student's scratch buffer counts too).
Then a neighbour graded at the same moment fails for no fault of its own: its
runner cannot start ("out of memory"), or the checker cannot allocate a case's
input (a checker_error: not a grade). So a run that shared the GPU and failed
in a way an out-of-memory explains runs once more with the GPU to itself, and
only that run counts; the student's feedback says so. A run alone that still
runs out is judged as it is: nobody else was on the GPU.

A submission that prints "out of memory" on purpose gains a second run alone,
judged the same way: never a grade. But a run alone stops every other
worker's GPU work, so it is bounded (ALONE_SECONDS for the run, ALONE_CALL_SECONDS
a call; a correct lab's tests take about 2 s alone, a sanitizer tool about 3),
and a run in which a case hung gets none (a hang is not for want of memory):
asking for one and then hanging costs the batch at most ALONE_SECONDS for a
lab's tests, and as much for its sanitizer tools (sanitize_lab).

Every run on a shared GPU holds one of its few run slots (gate.py; how many:
gpus.runs_at_once, with the measurements) once its processes are up, and the
gate's shared side from their start (timed_hold; admission.py): the GPU
switches between the processes' contexts rather than running them side by
side, and each slot has room for the 2^32-element case. An earlier design ran
that case in a checker process of its own, the only one that took a slot, and
let the rest of every worker's tests onto the GPU at once: each lab's tests
then took twice as long (gpus.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar
from pathlib import Path

from . import sanitizer_places
from .gate import Gate, Ticket, held
from ...infra.trace import trace
from ...results import BinaryRun, LabResult
from ...status import CaseStatus, RunStatus, SanitizerStatus
from . import reference_tools
from .. import sanitize as sanitize_mod
from .admission import Admit
from ..checker_passes import Pass, run_passes
from ..checker_run import CheckerOptions

R = TypeVar("R")

# What the CUDA runtime, the driver, compute-sanitizer and our checker
# (contract_check.cuh's check_huge: "the GPU has N GiB free ... other processes
# hold the rest") write when memory runs out.
_OUT_OF_MEMORY = re.compile(
    r"out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|other processes hold",
    re.IGNORECASE,
)

# A run alone: the whole run, and one call, far above any reference's call
# (see docs/decisions.md, "A run alone: 15 s a call").
ALONE_SECONDS = 60.0
ALONE_CALL_SECONDS = 15.0

RERUN_NOTE = (
    "the GPU ran out of memory while other students' tests shared it ({why}); "
    "{what} ran again with the GPU to itself, and only that run counts"
)


def short_of_memory(texts: Iterable[str]) -> str | None:
    """The first of `texts` that says memory ran out, cut to one line, or None."""
    for text in texts:
        found = _OUT_OF_MEMORY.search(text or "")
        if found:
            start = max(0, found.start() - 80)
            return " ".join(text[start : found.end() + 80].split())
    return None


def run_failures(run: BinaryRun) -> list[str]:
    """What a checker run says went wrong: its reason and its failing cases'."""
    failing = [f for c in run.cases if c.status != CaseStatus.PASSED for f in c.failures]
    return [run.reason, *failing]


def hung(run: BinaryRun) -> bool:
    """Did the whole run, or a call of one of its cases, run out of time? (A
    call that passes its --call-timeout fails its case with the hint timed_out.)"""
    return run.status == RunStatus.TIMED_OUT or any(
        c.status == CaseStatus.TIMED_OUT or c.properties.get("fail_hint") == "timed_out"
        for c in run.cases
    )


def shared_then_alone(
    gate: Gate | None, once: Callable[[bool], R], why_short: Callable[[R], str | None]
) -> tuple[R, str | None]:
    """once(False), which holds `gate` shared; once(True), which holds it alone
    (bounded: ALONE_SECONDS), when `gate` is shared and why_short says the first
    run went short of memory. Returns the run that counts and, when it was the
    second, why."""
    first = once(False)
    why = why_short(first) if gate is not None else None
    return (first, None) if why is None else (once(True), why)


@contextlib.contextmanager
def timed_hold(
    gate: Gate | None, alone: bool, what: str, passes: tuple[str, ...] = ()
) -> Iterator[Ticket | None]:
    """held(gate), with a trace line of how long the run waited for the GPU
    and how long it held it (GRADER_TRACE: where a batch's time goes). A
    shared run holds the gate's shared side here and yields the slot it must
    take once its processes are up (run_checker's `admit`, gate.py says why);
    a run alone, or one without a gate, yields None. A checker of several
    passes (checker_passes.py) gets a line for each, named in `passes`."""
    asked = time.monotonic()
    if gate is None or alone:
        with held(gate, exclusive=alone):
            got = time.monotonic()
            try:
                yield None
            finally:
                if gate is not None:
                    trace(
                        f"{threading.current_thread().name} {what} alone: "
                        f"waited {got - asked:.1f} s, ran {time.monotonic() - got:.1f} s"
                    )
        return
    who = threading.current_thread().name
    names = iter(passes)

    def pass_ended(ticket: Ticket) -> None:
        end = time.monotonic()
        got = ticket.slot_got if ticket.slot_got is not None else end
        ready = ticket.slot_asked if ticket.slot_asked is not None else end
        name = next(names, what)
        trace_hold(who, name, ticket.asked, ticket.passed, ready, got, end)

    with gate.shared_pass() as ticket:
        ticket.on_pass_end = pass_ended
        try:
            yield ticket
        finally:
            pass_ended(ticket)


def trace_hold(
    who: str, what: str, asked: float, passed: float, ready: float, got: float, end: float
) -> None:
    """A run's trace line (throughput.py reads it): it asked for the gate at
    `asked` and passed at `passed`; its processes were up at `ready`; it got its
    slot (or the GPU alone) at `got` and left it at `end`. waited: for the gate
    and then the slot; started: the processes' start between; ran: holding it."""
    trace(
        f"{who} {what}: waited {passed - asked + got - ready:.1f} s, "
        f"ran {end - got:.1f} s, started {ready - passed:.1f} s"
    )


def checker_sharing(
    gate: Gate | None, run_once: Callable[[bool, Admit | None], BinaryRun]
) -> tuple[BinaryRun, str | None]:
    """A checker run through shared_then_alone: a run in which something hung
    gets no run alone. Returns the run that counts and the note for the student.
    run_once(alone, admit): admit goes to run_checker."""

    def once(alone: bool) -> BinaryRun:
        with timed_hold(gate, alone, "tests") as admit:
            return run_once(alone, admit)

    run, why = shared_then_alone(
        gate, once, lambda r: None if hung(r) else short_of_memory(run_failures(r))
    )
    return run, why and RERUN_NOTE.format(why=why, what="your tests")


@dataclass(frozen=True)
class ToolsSetting:
    """What a lab's compute-sanitizer tools run with (sanitize_lab), passed on
    whole: the GPU's gate (None: a GPU nobody shares), the runs' environment
    and seed, and the reference's runners a tool's unclean ending is judged
    against (reference_tools.py; None: such an ending costs nothing)."""

    gate: Gate | None
    env: dict[str, str] | None
    seed: int | None
    reference: reference_tools.ReferenceTools | None = None


def sanitize_lab(
    lab,
    checker: Path,
    runner: Path,
    iso,
    result: LabResult,
    setting: ToolsSetting,
    ran: list[sanitize_mod.SanitizerRun] | None = None,
) -> None:
    """The small cases under each compute-sanitizer tool, into `result`: a
    hazard costs every point, and so does a tool that did not finish cleanly
    where setting.reference shows it clean on the reference solution here
    (reference_tools.py says why). The tools run in one checker, a pass each
    (checker_passes.py), which leaves the GPU's shared side between two, so
    that a timed run waiting for the GPU waits for one tool, not three; `ran`:
    the tools' runs already made, after the lab's tests (tests_then_tools). A
    tool whose pass went short of memory beside others runs again alone."""
    gate, reference = setting.gate, setting.reference
    options = sanitize_mod.ToolOptions(env=setting.env, seed=setting.seed)
    if not sanitize_mod.available():
        result.sanitizer["all"] = "unavailable"
        return
    tools = sanitize_mod.tools_for(lab)

    def alone(tool: str) -> sanitize_mod.SanitizerRun:
        with sanitizer_places.place(iso), timed_hold(gate, True, f"sanitizer {tool}"):
            alone_options = dataclasses.replace(options, timeout=ALONE_SECONDS)
            return sanitize_mod.run_tool(checker, lab.id, runner, iso, tool, options=alone_options)

    # A run slot too, though the small cases need little memory: beside the
    # slots' checkers, both the tools and the test runs took several times as
    # long: the GPU switches between more contexts, and each waits its turn
    # (see docs/decisions.md, "compute-sanitizer's tools hold a run slot").
    # `of`: the runner the tools wrap (the reference's, kept by the preflight,
    # to judge a tool that did not finish cleanly: reference_tools.py).
    def one_checker(
        some: tuple[str, ...], of: Path = runner, what: str = "sanitizer"
    ) -> list[sanitize_mod.SanitizerRun]:
        names = tuple(f"{what} {t}" for t in some)
        with sanitizer_places.place(iso), timed_hold(gate, False, what, names) as admit:
            return sanitize_mod.run_tools(
                checker, lab.id, of, iso, some, options=options, admit=admit
            )

    runs = one_checker(tools) if ran is None else list(ran)
    # After a run alone that hung, no other tool of this lab gets one: an
    # honest lab beside a full GPU does not hang alone, and each would cost
    # every worker ALONE_SECONDS.
    may_go_alone = True
    for k, tool in enumerate(tools):
        if not runs[k].started:
            # Its pass never started (one before it hung or ended the checker).
            # The tools not run yet run in a checker of their own: a lab that
            # hangs under one tool must not take the others' verdicts with it,
            # unless it has lost its points already (a hang under each tool
            # would cost the batch up to TOOL_SECONDS each).
            unrun = tuple(t for t, r in zip(tools[k:], runs[k:]) if not r.started)
            if not result.points_correctness:
                result.notes.append(
                    f"compute-sanitizer {', '.join(unrun)}: not run, the lab had lost its "
                    "points under the tools before"
                )
                break
            again = dict(zip(unrun, one_checker(unrun)))
            runs = [again.get(t, r) if j >= k else r for j, (t, r) in enumerate(zip(tools, runs))]
        shared = runs[k]

        def once(go_alone: bool, tool: str = tool, shared=shared) -> sanitize_mod.SanitizerRun:
            return alone(tool) if go_alone else shared  # the pass above, shared

        tool_run, why = shared_then_alone(gate if may_go_alone else None, once, _sanitizer_short)
        if why is not None:
            result.notes.append(RERUN_NOTE.format(why=why, what=f"compute-sanitizer {tool}"))
            may_go_alone = tool_run.status != SanitizerStatus.TIMED_OUT
        result.sanitizer[tool_run.tool] = tool_run.status
        if tool_run.status == SanitizerStatus.FINDINGS:
            result.points_correctness = result.points_performance = 0.0
            result.hints.insert(
                0,
                f"compute-sanitizer {tool_run.tool} found a hazard that the "
                f"outputs did not show: " + "; ".join(tool_run.findings[:3]),
            )
        elif tool_run.status in reference_tools.NOT_FINISHED and result.points_correctness:

            def on_reference(kept: Path, tool: str = tool) -> sanitize_mod.SanitizerRun:
                return one_checker((tool,), kept, "reference sanitizer")[0]

            ref = reference.verdict(lab.id, tool, on_reference) if reference else None
            if reference_tools.counts(tool_run, ref):
                result.points_correctness = result.points_performance = 0.0
                result.hints.insert(0, reference_tools.hint(tool_run))
            else:
                result.notes.append(reference_tools.note(tool_run, ref))


def _sanitizer_short(run: sanitize_mod.SanitizerRun) -> str | None:
    """Why a sanitizer run went short of memory; never for one that timed out
    (a hang gets no run alone)."""
    if run.status not in (
        SanitizerStatus.FINDINGS,
        SanitizerStatus.FAILED,
        SanitizerStatus.TESTS_FAILED,
    ):
        return None
    return short_of_memory([*run.findings, run.output_tail])


class _PlaceForTools:
    """The admission (admission.py) of a checker whose passes after the first
    are compute-sanitizer's tools: a gate.Ticket that, at the first pass's end
    ('n'), takes a sanitizer place (sanitizer_places.place) with nothing of the
    gate held, kept to the run's end (`stack`). The tests before need none, and
    holding one from the start would let no more tests run at once than places."""

    def __init__(self, ticket: Ticket, place, stack: contextlib.ExitStack) -> None:
        self._ticket, self._place, self._stack = ticket, place, stack

    def __call__(self) -> contextlib.AbstractContextManager[None]:
        return self._ticket.slot()

    def rejoin(self) -> None:
        self._ticket.rejoin(between=self._take)

    def _take(self) -> None:
        if self._place is not None:
            self._stack.enter_context(self._place)
            self._place = None


def tests_then_tools(
    gate: Gate,
    lab,
    checker: Path,
    runner: Path,
    iso,
    tests: Pass,
    tests_alone: Callable[[bool, Admit | None], BinaryRun],
    options: CheckerOptions,
) -> tuple[BinaryRun, str | None, list[sanitize_mod.SanitizerRun] | None]:
    """A batch's untimed run of a GPU lab: its tests (the pass `tests`, of
    `runner` through `iso`), then, when every one passed, the small cases under
    each compute-sanitizer tool, in one checker (checker_passes.py): a correct
    lab starts two checkers, not three. Between two passes the run leaves the
    GPU's shared side, as between two checkers. Returns the tests' run, the
    note for the student, and the tools' runs for sanitize_lab's `ran` (None
    when they did not run: a test failed, or the tests ran again alone, as
    checker_sharing runs them, with `tests_alone`). `options`: the lab's
    untimed run_checker options, of which the checker's passes share impl,
    timeout, seed, env and gpu_expected (each pass has its own filter and
    limits)."""
    tools = sanitize_mod.tools_for(lab)
    env = options.env
    shared = CheckerOptions(
        impl=options.impl,
        timeout=options.timeout,
        seed=options.seed,
        env=env,
        gpu_expected=options.gpu_expected,
    )
    passes = [tests, *sanitize_mod.tool_passes(runner, iso, tools, env=env)]
    names = ("tests", *(f"sanitizer {t}" for t in tools))

    def once(alone: bool) -> tuple[BinaryRun, list[sanitize_mod.SanitizerRun] | None]:
        if alone:
            with timed_hold(gate, True, "tests") as admit:
                return tests_alone(True, admit), None
        with contextlib.ExitStack() as stack, timed_hold(gate, False, "tests", names) as ticket:
            assert ticket is not None  # a shared run at a gate
            place = _PlaceForTools(ticket, sanitizer_places.place(iso), stack)
            runs = run_passes(
                checker, lab.id, passes, options=shared, admit=place, later_if_first_passed=True
            )
        tool_runs = [sanitize_mod.verdict(t, r) for t, r in zip(tools, runs[1:])]
        return runs[0], tool_runs or None

    (run, tool_runs), why = shared_then_alone(
        gate, once, lambda r: None if hung(r[0]) else short_of_memory(run_failures(r[0]))
    )
    return run, why and RERUN_NOTE.format(why=why, what="your tests"), tool_runs
