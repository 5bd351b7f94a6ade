"""Running a checker: results come only from its result stream (a file
descriptor the runner never gets), every test of its list gets a result, and
an exit code is never a result."""

import contextlib
import json
import stat
import textwrap
from pathlib import Path

from conftest import FIXTURES

from grader.engine.checker_run import CheckerOptions, checker_args, parse_stream, run_checker
from grader.engine.gtest_run import parse_gtest_json
from grader.infra.runner import RunnerSpec

TESTS = ["A.one", "A.two", "B.three"]


def fake_checker(tmp_path: Path, body: str) -> Path:
    """A stand-in checker (Python) that lists TESTS and runs `body` with
    `emit(test, result)` writing to the result descriptor it was given."""
    path = tmp_path / "fake_checker"
    path.write_text(
        "#!/usr/bin/env python3\n"
        + textwrap.dedent("""
        import json, os, sys, time
        args = sys.argv[1:]
        if "--gtest_list_tests" in args:
            print("A.\\n  one\\n  two\\nB.\\n  three  # GetParam() = 3")
            sys.exit(0)
        fd = int(next(a for a in args if a.startswith("--result-fd=")).split("=")[1])
        out = os.fdopen(fd, "w")
        def emit(test, result="passed", **props):
            out.write(json.dumps({"event": "start", "test": test}) + "\\n")
            out.write(json.dumps({"event": "end", "test": test, "result": result,
                                   "time_ms": 1, "properties": props, "failures":
                                   [] if result != "failed" else ["boom"]}) + "\\n")
            out.flush()
        out.write(json.dumps({"event": "run", "seed": "42"}) + "\\n")
    """)
        + textwrap.dedent(body)
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def run(tmp_path, body, **kw):
    runner = tmp_path / "runner"
    runner.write_text("#!/bin/sh\n")
    runner.chmod(0o755)
    admit = kw.pop("admit", None)
    checker = fake_checker(tmp_path, body)
    return run_checker(
        checker, "01_cpu_baseline", RunnerSpec(runner), CheckerOptions(**kw), admit=admit
    )


def test_stream_keeps_finished_tests_and_names_the_one_running():
    text = "\n".join(
        [
            '{"event":"run","seed":"9"}',
            '{"event":"start","test":"A.one"}',
            '{"event":"end","test":"A.one","result":"passed","time_ms":3,"properties":{"n":"5"},"failures":[]}',
            '{"event":"start","test":"A.two"}',
            '{"event":"end","test":"A.tw',  # cut short when the checker was killed
        ]
    )
    cases, running, events = parse_stream(text)
    assert [c.name for c in cases] == ["A.one"] and running == "A.two"
    assert events["seed"] == "9"


def test_all_tests_reported_is_a_complete_run(tmp_path):
    r = run(tmp_path, 'for t in ["A.one", "A.two", "B.three"]: emit(t)\n', seed=42)
    assert r.status == "completed" and r.passed == 3 and not r.failed
    assert r.properties["seed"] == "42"


def test_its_tests_run_in_the_slot_it_is_admitted_to(tmp_path):
    # The checker says it is up on READY and waits on GO (admission.py); its
    # tests run while the slot is held, and the slot is left when it ends.
    held = []

    @contextlib.contextmanager
    def slot():
        held.append("in")
        yield
        held.append("out")

    body = """
    ready, go = next(a for a in args if a.startswith("--admission-fds=")).split("=")[1].split(",")
    os.write(int(ready), b"r")
    assert os.read(int(go), 1) == b"g"
    for t in ["A.one", "A.two", "B.three"]: emit(t)
    """
    r = run(tmp_path, body, admit=slot)
    assert r.status == "completed" and r.passed == 3, r.output_tail
    assert held == ["in", "out"]


def test_a_test_without_a_result_counts_as_failed(tmp_path):
    r = run(tmp_path, 'emit("A.one")\nsys.exit(0)\n')
    assert r.status == "completed"
    assert {c.name: c.status for c in r.cases} == {
        "A.one": "passed",
        "A.two": "not_run",
        "B.three": "not_run",
    }
    assert len(r.failed) == 2


def test_fake_results_on_stdout_are_only_a_log(tmp_path):
    r = run(
        tmp_path,
        textwrap.dedent("""
        print(json.dumps({"event": "end", "test": "A.two", "result": "passed"}))
        print("[  PASSED  ] 3 tests.")
        emit("A.one"); emit("B.three", "failed")
        sys.exit(0)
    """),
    )
    assert {c.name: c.status for c in r.cases}["A.two"] == "not_run"
    assert {c.name: c.status for c in r.cases}["B.three"] == "failed"


def test_a_hang_is_stopped_and_keeps_what_finished(tmp_path):
    r = run(
        tmp_path,
        textwrap.dedent("""
        emit("A.one")
        out.write(json.dumps({"event": "start", "test": "A.two"}) + "\\n"); out.flush()
        time.sleep(60)
    """),
        timeout=3,
    )
    states = {c.name: c.status for c in r.cases}
    assert r.status == "timed_out"
    assert states == {"A.one": "passed", "A.two": "timed_out", "B.three": "not_run"}


def test_exit_77_is_a_skip_only_when_the_grader_found_no_gpu(tmp_path):
    body = 'print("SKIP lab (labs): no usable CUDA GPU"); sys.exit(77)\n'
    assert run(tmp_path, body, gpu_expected=False).status == "skipped"
    r = run(tmp_path, body, gpu_expected=True)
    assert r.status == "checker_failed" and "found no usable GPU" in r.reason


def test_any_other_exit_code_is_the_checkers_fault(tmp_path):
    r = run(tmp_path, 'emit("A.one")\nsys.exit(2)\n')
    assert r.status == "checker_failed" and "exit code 2" in r.reason


def test_a_missing_checker_is_reported(tmp_path):
    assert run_checker(tmp_path / "nope", "x", RunnerSpec(tmp_path / "r")).status == "missing"


def load(name):
    return parse_gtest_json(json.loads((FIXTURES / name).read_text()))


def test_recorded_gtest_reports_still_parse():
    program, cases = load("cpu_passing.json")
    assert program["seed"] == "7" and len(cases) == 4
    _, cases = load("cpu_not_implemented.json")
    assert next(c for c in cases if "n257" in c.name).properties["fail_hint"] == "not_implemented"


def test_the_hang_budget_is_passed_only_when_set(tmp_path):
    def args(**kw):
        return checker_args(
            tmp_path / "checker",
            "07_atomic_finish",
            RunnerSpec(tmp_path / "runner"),
            CheckerOptions(impl="labs", call_timeout=10.0, **kw),
        )

    assert "--max-timeouts=1" in args(max_timeouts=1)
    assert not any(a.startswith("--max-timeouts") for a in args())
    assert "--first-call-only" in args(first_call_only=True)
    assert "--first-call-only" not in args()
