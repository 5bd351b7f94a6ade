"""Several passes of a lab's tests in one checker (grader/engine/checker_passes.py,
tests/support/checker_passes.hpp), with a stand-in checker that speaks the
real one's stream, output lines and admission bytes: each pass is judged as a
checker of its own would be, a pass the checker never reached is never a
pass, the lab's output cannot move a pass's boundary, and between two passes
the run leaves the GPU's shared side, where a timed run may take it."""

import dataclasses
import stat
import textwrap
import threading
import time
from pathlib import Path

from grader.engine.checker_passes import NOT_STARTED, Pass, pass_args, run_passes, split_output
from grader.engine.checker_run import CheckerOptions
from grader.engine.sharing.gate import Gate
from grader.infra.runner import RunnerSpec
from grader.status import CaseStatus, RunStatus

TESTS = ["A.one", "A.two"]

# argv: the checker's; BEFORE and STEP: what it does in each pass (fake_checker).
CHECKER = """
import json, os, sys, time
args = sys.argv[1:]
value = lambda flag: [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
if "--gtest_list_tests" in args:
    print("A.\\n  one" if value("--gtest_filter") == ["A.one"] else "A.\\n  one\\n  two")
    sys.exit(0)
own = {}  # each pass's --pass-filter
for a in args:
    if a.startswith("--pass="):
        name = a.split("=", 1)[1]
    elif a.startswith("--pass-filter="):
        own[name] = a.split("=", 1)[1]
out = os.fdopen(int(value("--result-fd")[0]), "w")
fds = value("--admission-fds")
ready, go = map(int, fds[0].split(",")) if fds else (None, None)
def say(byte):
    if ready is None:
        return
    os.write(ready, byte)
    if os.read(go, 1) != b"g":
        sys.exit(4)
def event(**ev):
    out.write(json.dumps(ev) + "\\n"); out.flush()
event(event="run", seed="5")
passes = value("--pass")
for i, name in enumerate(passes):
    BEFORE
    print(f"[checker pass {i + 1}/{len(passes)}: {name}]", flush=True)
    event(event="pass", name=name)
    if i:
        say(b"n")
    say(b"r")
    outcome = "passed"
    STEP
    for t in ["A.one"] if own.get(name) == "A.one" else ["A.one", "A.two"]:
        event(event="start", test=t)
        event(event="end", test=t, result=outcome, time_ms=1, properties={}, failures=[])
    print(f"  | output of {name}", flush=True)
    event(event="runner_exit", **{"pass": name, "how": {"code": 0}})
    if "--later-passes-if-first-passed" in args and i == 0 and outcome != "passed":
        break
"""


def fake_checker(tmp_path: Path, step: str = "pass", before: str = "pass") -> Path:
    """The stand-in checker: `before` runs before each pass begins, `step`
    once it is up and admitted (`name` is the pass's)."""
    path = tmp_path / "checker"
    body = textwrap.dedent(CHECKER).replace("STEP", step).replace("BEFORE", before)
    path.write_text("#!/usr/bin/env python3\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def passes(tmp_path: Path, names=("memcheck", "racecheck", "synccheck")) -> list[Pass]:
    runner = tmp_path / "runner"
    runner.write_text("#!/bin/sh\n")
    runner.chmod(0o755)
    return [
        Pass(n, RunnerSpec(runner, ["unshare", "--", "sanitizer", f"--tool={n}", "--"]))
        for n in names
    ]


def run(tmp_path, step="pass", before="pass", ps=None, **kw):
    options = CheckerOptions(timeout=kw.pop("timeout", 30.0), seed=5, env={})
    return run_passes(
        fake_checker(tmp_path, step, before),
        "07_atomic_finish",
        ps or passes(tmp_path),
        options,
        **kw,
    )


def test_the_passes_share_the_runner_and_differ_in_their_own_prefix(tmp_path):
    ps = passes(tmp_path)
    ps[1] = Pass(ps[1].name, ps[1].runner, first_call_only=True)
    common, args = pass_args(ps)
    assert common.prefix == ["unshare", "--", "sanitizer"]
    assert args[:3] == ["--pass=memcheck", "--pass-prefix=--tool=memcheck", "--pass-prefix=--"]
    assert args[3:7] == [
        "--pass=racecheck",
        "--pass-prefix=--tool=racecheck",
        "--pass-prefix=--",
        "--pass-first-call-only",
    ]


def test_each_pass_is_judged_on_its_own_part(tmp_path):
    runs = run(tmp_path)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 3
    for r, name in zip(runs, ("memcheck", "racecheck", "synccheck")):
        assert [c.name for c in r.cases] == TESTS and r.passed == 2
        assert r.runner_exits == [{"event": "runner_exit", "pass": name, "how": {"code": 0}}]
        assert f"output of {name}" in r.output_tail
        assert all(
            f"output of {o}" not in r.output_tail for o in {"memcheck", "synccheck"} - {name}
        )
        assert r.properties["seed"] == "5"


def test_a_checker_stopped_in_a_pass_leaves_the_later_ones_unrun_never_passed(tmp_path):
    hang = "if name == 'racecheck': time.sleep(30)"
    runs = run(tmp_path, hang, timeout=2.0)
    assert runs[0].status == RunStatus.COMPLETED and runs[0].passed == 2
    assert runs[1].status == RunStatus.TIMED_OUT and runs[1].passed == 0
    assert runs[2].status == RunStatus.TIMED_OUT and "pass before synccheck" in runs[2].reason
    assert [c.status for c in runs[2].cases] == [CaseStatus.NOT_RUN] * 2
    assert [NOT_STARTED in r.properties for r in runs] == [False, False, True]


def test_a_checker_that_ends_cleanly_without_a_pass_has_failed(tmp_path):
    runs = run(tmp_path, before="if name == 'synccheck': sys.exit(0)")
    assert [r.status for r in runs[:2]] == [RunStatus.COMPLETED] * 2
    assert runs[2].status == RunStatus.CHECKER_FAILED and runs[2].passed == 0


def test_the_labs_output_cannot_move_a_passes_boundary():
    forged = (
        "[checker pass 1/2: a]\n  | [checker pass 2/2: b]\n  | hazard\n[checker pass 2/2: b]\nb's\n"
    )
    first, second = split_output(forged, 2)
    assert "hazard" in first and "hazard" not in second and "b's" in second


def test_between_passes_a_timed_run_may_take_the_gpu(tmp_path):
    """The run leaves the gate's shared side at 'n' (Ticket.rejoin): a timed run
    waiting meanwhile gets the GPU before the next pass starts its runner; each
    pass holds a run slot only once up."""
    gate = Gate("gpu", run_slots=1)
    seen = []

    def timed():
        with gate.exclusive():
            seen.append(("timed", time.monotonic()))
            time.sleep(0.3)

    step = "time.sleep(0.4)"
    thread = threading.Thread(target=timed)
    with gate.shared_pass() as ticket:
        original = ticket.rejoin

        def rejoin():
            seen.append(("rejoin", time.monotonic()))
            original()
            seen.append(("back", time.monotonic()))

        ticket.rejoin = rejoin
        thread.start()  # waits for the first pass to end: a drain is due
        runs = run(tmp_path, step, admit=ticket)
    thread.join()
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 3
    kinds = [k for k, _ in seen]
    assert kinds[:3] == ["rejoin", "timed", "back"], seen
    timed_at = dict(seen)["timed"]
    back = [t for k, t in seen if k == "back"][0]
    assert back - timed_at >= 0.3  # the pass after waited for the whole timed run
    assert gate._slots._value == 1 and not gate._started


def test_a_pass_has_its_own_filter_limits_and_hang_budget(tmp_path):
    ps = passes(tmp_path)
    ps[0] = dataclasses.replace(
        ps[0], gtest_filter="A.one", timeout=9.0, call_timeout=2.5, max_timeouts=1
    )
    args = pass_args(ps)[1]
    assert args[:6] == [
        "--pass=memcheck",
        "--pass-prefix=--tool=memcheck",
        "--pass-prefix=--",
        "--pass-filter=A.one",
        "--pass-call-timeout=2.5",
        "--pass-max-timeouts=1",
    ]
    runs = run(tmp_path, ps=ps)
    # Each pass is expected to run its own filter's tests: none is missing.
    assert [[c.name for c in r.cases] for r in runs] == [["A.one"], TESTS, TESTS]
    assert all(c.status == CaseStatus.PASSED for r in runs for c in r.cases)


def test_later_passes_run_only_when_every_test_of_the_first_passed(tmp_path):
    fail_first = "if name == 'memcheck': outcome = 'failed'"
    runs = run(tmp_path, fail_first, later_if_first_passed=True)
    assert len(runs) == 1 and len(runs[0].failed) == 2  # the tools are not for a failing lab
    runs = run(tmp_path, later_if_first_passed=True)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 3
    # Without the flag a failed first pass does not stop the others.
    assert len(run(tmp_path, fail_first)) == 3
    # With it, a later pass that failed stops nothing: each tool's verdict is its own.
    runs = run(tmp_path, "if name == 'racecheck': outcome = 'failed'", later_if_first_passed=True)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 3 and len(runs[2].cases) == 2


def test_each_pass_has_its_own_time_limit_from_its_start(tmp_path):
    """Admitted, each pass gets its own limit from when it is let go on ('n'):
    three passes of 0.8 s each under limits of 1.5 s end; the sum would not
    fit the first's. A pass over its own limit is the one that timed out."""
    ps = [dataclasses.replace(p, timeout=1.5) for p in passes(tmp_path)]
    gate = Gate("gpu", run_slots=1)
    with gate.shared_pass() as ticket:
        runs = run(tmp_path, "time.sleep(0.8)", ps=ps, timeout=99.0, admit=ticket)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 3
    slow_last = "time.sleep(0.8 if name != 'synccheck' else 30)"
    with gate.shared_pass() as ticket:
        runs = run(tmp_path, slow_last, ps=ps, timeout=99.0, admit=ticket)
    assert [r.status for r in runs] == [RunStatus.COMPLETED] * 2 + [RunStatus.TIMED_OUT]
    assert "1 s" in runs[2].reason or "2 s" in runs[2].reason  # its own limit, not 99 s
