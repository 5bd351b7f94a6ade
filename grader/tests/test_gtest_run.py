"""Reading gtest's JSON report and the result stream; resuming after a crash."""
import json
import os
import stat
import textwrap

from conftest import FIXTURES
from grader.gtest_run import parse_gtest_json, parse_stream, run_gtest


def load(name):
    return parse_gtest_json(json.loads((FIXTURES / name).read_text()))


def test_passing_report_gives_cases_and_program_properties():
    program, cases = load("cpu_passing.json")
    assert program["seed"] == "7" and program["lab"] == "01_cpu_baseline"
    assert len(cases) == 4 and all(c.status == "passed" for c in cases)
    assert {c.properties["input"] for c in cases if "input" in c.properties} == {
        "random", "constant", "alternating"}


def test_failed_case_keeps_its_recorded_properties():
    _, cases = load("cpu_not_implemented.json")
    assert all(c.status == "failed" for c in cases)
    edge = next(c for c in cases if "n257" in c.name)
    assert edge.properties["fail_hint"] == "not_implemented"
    assert edge.properties["fail_n"] == "257"
    assert "not implemented" in edge.failures[0]


def test_skipped_case_is_skipped_not_failed():
    _, cases = load("cpu_perf_skipped.json")
    statuses = {c.name.split(".")[0]: c.status for c in cases}
    assert statuses["CpuSumBandwidth"] == "skipped"


def test_stream_keeps_finished_tests_and_names_the_one_running():
    text = "\n".join([
        '{"event":"start","test":"A.one"}',
        '{"event":"end","test":"A.one","result":"passed","time_ms":3,"properties":{"n":"5"},"failures":[]}',
        '{"event":"start","test":"A.two"}',
        '{"event":"end","test":"A.tw',   # cut short by the crash
    ])
    cases, running, abort = parse_stream(text)
    assert [c.name for c in cases] == ["A.one"] and running == "A.two" and abort == ""


def fake_binary(tmp_path, script):
    """A stand-in test binary (Python) that speaks the stream protocol."""
    path = tmp_path / "fake_test"
    path.write_text("#!/usr/bin/env python3\n" + textwrap.dedent(script))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


CRASHER = """
import json, os, sys
filt = next(a for a in sys.argv if a.startswith("--gtest_filter=")).split("=", 1)[1]
skip = set(filt.split("-", 1)[1].split(":")) if "-" in filt else set()
out = next(a for a in sys.argv if a.startswith("--gtest_output=json:")).split(":", 1)[1]
stream = open(os.environ["LAB_RESULT_STREAM"], "a")
done = []
for name in ["S.a", "S.crash", "S.b"]:
    if name in skip:
        continue
    stream.write(json.dumps({"event": "start", "test": name}) + "\\n"); stream.flush()
    if name == "S.crash":
        os.kill(os.getpid(), 11)
    stream.write(json.dumps({"event": "end", "test": name, "result": "passed",
                             "properties": {}, "failures": []}) + "\\n"); stream.flush()
    done.append(name)
json.dump({"testsuites": [{"name": "S", "testsuite": [
    {"name": n.split(".")[1], "status": "RUN", "result": "COMPLETED", "time": "0s"} for n in done]}]},
    open(out, "w"))
"""


def test_crash_keeps_earlier_results_and_resumes_after_the_culprit(tmp_path):
    run = run_gtest(fake_binary(tmp_path, CRASHER), timeout=30)
    assert run.status == "crashed" and "SIGSEGV" in run.reason
    assert {c.name: c.status for c in run.cases} == {
        "S.a": "passed", "S.crash": "crashed", "S.b": "passed"}
    assert run.restarts == 1


def test_hang_keeps_earlier_results_and_stops(tmp_path):
    hanger = CRASHER.replace("os.kill(os.getpid(), 11)", "import time; time.sleep(60)")
    run = run_gtest(fake_binary(tmp_path, hanger), timeout=2)
    assert run.status == "timed_out" and "timed out" in run.reason
    assert {c.name: c.status for c in run.cases} == {"S.a": "passed", "S.crash": "timed_out"}


def test_skip_exit_code_means_skipped(tmp_path):
    binary = fake_binary(tmp_path, "import sys\nprint('SKIP lab: no GPU')\nsys.exit(77)\n")
    run = run_gtest(binary)
    assert run.status == "skipped" and run.reason == "SKIP lab: no GPU"


def test_missing_binary_is_reported_not_raised(tmp_path):
    assert run_gtest(tmp_path / "nope").status == "missing"
