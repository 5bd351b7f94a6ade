"""The sandbox (grader/infra/sandbox.py): each escape attempt of tests/escapes/ is
contained and graded (lab 01 scores 0, with the reason), the honest students
graded before and after it keep their points, and nothing outside the
submission's folder was read, written or reached. The linked policy check is
off here, so that the attempts really run (it would refuse most of them for
their system calls). The read and socket attempts are also graded without
the sandbox, where they work: the tests are not vacuous.

Needs bubblewrap (apt install bubblewrap) and user namespaces, and nvcc for the
graded runs (the harness is built with meson); skips with the reason otherwise."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import honest

from grader.batch import orchestrator as batch, config as batch_config
from grader.infra import bwrap, isolation, proc, sandbox
from grader.infra.toolchain import REPO

sys.path.insert(0, str(REPO / "tests" / "escapes"))
import make_escapes  # noqa: E402
from listener import Listener  # noqa: E402

OK, WHY = bwrap.available()
needs_bwrap = pytest.mark.skipif(not OK, reason=f"no sandbox here: {WHY}")
needs_build = pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="no nvcc: the harness cannot be built here"
)
LAB = "01_cpu_baseline"
TIMEOUT = 15  # seconds per lab: the hang and the fork bomb cost this much each
LIMITS = ["processes=96", "memory_mb=1024", "output_mb=8"]
ESCAPES = {e["name"]: e for e in make_escapes.load()}


# -- without a build: the limits, the runner's output cap, what a sandbox sees ----------------


def test_limits_parse_and_reject_nonsense():
    lim = sandbox.Limits.parse(["memory_mb=2048", "processes=64"])
    assert (lim.memory_mb, lim.processes, lim.output_mb) == (2048, 64, 8)
    with pytest.raises(ValueError, match="bad sandbox limit"):
        sandbox.Limits.parse(["swap=3"])


def test_the_process_runner_stops_a_program_that_floods_its_output(tmp_path):
    start = time.time()
    done = proc.run(
        ["/bin/sh", "-c", "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
        timeout=60,
        options=proc.RunOptions(output_limit=1 << 20, tail=4000),
    )
    assert done.over_limit and not done.ok and "too much output" in done.describe()
    assert len(done.output) <= 4000 and time.time() - start < 30


def test_the_process_runner_kills_the_whole_group_on_a_timeout(tmp_path):
    marker = tmp_path / "survived"
    done = proc.run(["/bin/sh", "-c", f"(sleep 3; touch {marker}) & sleep 60"], timeout=1)
    assert done.timed_out
    time.sleep(3.5)
    assert not marker.exists()


def _in_cell(cell, script: str) -> subprocess.CompletedProcess:
    args, env = cell.command(["/bin/bash", "-c", script], {"LAB_X": "1", "SECRET_TOKEN": "s3"})
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)


@needs_bwrap
def test_a_sandboxed_runner_gets_the_checkers_chosen_variables(tmp_path):
    # bwrap clears the environment: what the checker chose for its runner (how
    # to wait for a shared GPU) must be on bwrap's command line, secrets not.
    box = sandbox.Sandbox(sandbox.Limits(), timeout=30)
    try:
        cell = box.cell("ann")
        binary = tmp_path / "runner"
        binary.write_text("#!/bin/sh\n")
        env = {"LAB_GPU_WAIT": "block", "SECRET_TOKEN": "s3"}
        prefix = cell.runner(binary, env=env).prefix
        pairs = _setenv(prefix)
        assert ["LAB_GPU_WAIT", "block"] in pairs
        assert all(k != "SECRET_TOKEN" for k, _ in pairs)
        assert all(k != "LAB_GPU_WAIT" for k, _ in _setenv(cell.runner(binary).prefix))
    finally:
        box.cleanup()


def _setenv(prefix: list[str]) -> list[list[str]]:
    return [prefix[i + 1 : i + 3] for i, a in enumerate(prefix) if a == "--setenv"]


@needs_bwrap
def test_a_sandbox_sees_only_its_folder_and_no_network(tmp_path):
    box = sandbox.Sandbox(sandbox.Limits(), timeout=30)
    try:
        cell = box.cell("ann")
        other = box.cell("bea")
        (tmp_path / "listen").mkdir()
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        port = srv.getsockname()[1]
        probe = f"""
            echo uid=$(id -u)
            test -e {REPO}/solutions && echo SEES_REPO
            test -e {REPO}/tests && echo SEES_TESTS
            test -e {other.workdir} && echo SEES_OTHER
            touch {cell.workdir}/mine && echo WROTE_OWN
            touch /usr/x 2>/dev/null && echo WROTE_USR
            touch /x 2>/dev/null && echo WROTE_ROOT
            touch {tmp_path}/x 2>/dev/null && echo WROTE_OUTSIDE
            env | grep -q SECRET_TOKEN && echo SEES_SECRET
            env | grep -q LAB_X && echo GOT_LAB_ENV
            (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED
            ls /sys/class/net 2>/dev/null
        """
        res = _in_cell(cell, probe)
        out = res.stdout
        want_uid = bwrap.NOBODY if os.geteuid() == 0 else os.getuid()
        assert f"uid={want_uid}" in out, res.stderr
        assert "WROTE_OWN" in out and "GOT_LAB_ENV" in out
        for bad in (
            "SEES_REPO",
            "SEES_TESTS",
            "SEES_OTHER",
            "WROTE_USR",
            "WROTE_ROOT",
            "WROTE_OUTSIDE",
            "SEES_SECRET",
            "CONNECTED",
        ):
            assert bad not in out, (bad, out)
        srv.settimeout(0.1)
        with pytest.raises(OSError):
            srv.accept()
        # The same connection from outside the sandbox gets through: the probe is real.
        outside = subprocess.run(
            ["/bin/bash", "-c", f"(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo CONNECTED"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert "CONNECTED" in outside.stdout
        srv.close()
        # The limits are in force inside (processes, file size, core dumps, CPU time).
        res = _in_cell(box.cell("cid"), "ulimit -u; ulimit -f; ulimit -c; ulimit -t")
        lim = box.limits
        assert res.stdout.split() == [
            str(lim.processes),
            str(lim.output_mb * 1024),
            "0",
            str(box.cell("dan").cpu_seconds),
        ], res.stdout
    finally:
        box.cleanup()
    assert not box.root.exists()


# -- graded escapes -----------------------------------------------------------------------------


def sandbox_processes() -> list[str]:
    """Processes still running a binary from a sandbox's folder."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if "/grader-sandbox-" in cmd and "/bin/" in cmd:
            left.append(f"{pid} {cmd}")
    return left


def run(specs, out, **kw):
    config = batch_config.BatchConfig(
        out=out, lab_ids=["01"], gpus=[], perf=False, timeout=TIMEOUT, linked_policy=False, **kw
    )
    messages = []
    started = time.time()
    results = batch.run_batch([str(s) for s in specs], config, progress=messages.append)
    return {r.student: r for r in results}, messages, time.time() - started


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not OK:
        pytest.skip(f"no sandbox here: {WHY}")
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc: the harness cannot be built here")
    tmp = tmp_path_factory.mktemp("escapes")
    subs, out, canary = tmp / "subs", tmp / "out", tmp / "canary"
    canary.mkdir()
    alice, zed = honest(subs, "alice"), honest(subs, "zed")
    listener = Listener()
    values = {
        "CANARY": str(canary),
        "WORKER": str(out / "workers" / "w0" / "src"),
        "OUT": str(out),
        "PORT": str(listener.port),
        "OTHER": str(alice / "labs" / LAB / "cpu_sum.cpp"),
    }
    escapes = make_escapes.write_escapes(subs, values)
    results, messages, seconds = run(
        [alice, *escapes.values(), zed],
        out,
        sandbox=True,
        sandbox_limits=sandbox.Limits.parse(LIMITS),
    )
    time.sleep(0.5)
    left = sandbox_processes()
    connections = listener.connections
    listener.close()
    yield {
        "results": results,
        "messages": messages,
        "seconds": seconds,
        "out": out,
        "canary": canary,
        "connections": connections,
        "left": left,
        "tmp": tmp,
        "alice": alice,
        "values": values,
    }


@needs_bwrap
@needs_build
@pytest.mark.parametrize("name", list(ESCAPES))
def test_escape_is_contained_and_scores_zero_with_a_note(graded, name):
    esc = ESCAPES[name]
    lab = graded["results"][name].labs[0]
    want = esc["sandboxed"]
    assert lab.points == 0, f"{name}: {lab}"
    if want == "fence_refused":
        notes = " ".join(graded["results"][name].notes)
        assert "fence" in notes and "not used" in notes, notes
        return
    assert lab.status == "graded" and lab.tests_failed > 0
    assert lab.first_failure.hint == want, (name, lab.first_failure)
    if want == "wrong_value":
        assert any("grading sandbox" in n for n in lab.notes), lab.notes
        assert lab.first_failure.expected and lab.first_failure.got
        assert int(lab.first_failure.got) == int(lab.first_failure.expected) + 1
    if name == "memory_hog":
        assert "bad_alloc" in lab.first_failure.message


@needs_bwrap
@needs_build
def test_honest_students_before_and_after_keep_their_points(graded):
    for name in ("alice", "zed"):
        lab = graded["results"][name].labs[0]
        assert lab.status == "graded" and lab.tests_failed == 0, lab
        assert lab.points_correctness == lab.max_correctness
    assert len(graded["results"]) == len(ESCAPES) + 2
    csv = (graded["out"] / "gradebook.csv").read_text().splitlines()
    assert len(csv) == len(ESCAPES) + 3 and csv[1].startswith("alice,6,")


@needs_bwrap
@needs_build
def test_nothing_was_written_reached_or_left_running(graded):
    assert list(graded["canary"].iterdir()) == []
    assert not (graded["out"] / "escape-write").exists()
    assert not (graded["out"] / "workers" / "w0" / "src" / "escape-write").exists()
    assert graded["connections"] == 0
    assert graded["left"] == []
    # Results stay small whatever the binaries printed; the sandboxes are gone.
    for d in (graded["out"] / "students").iterdir():
        assert (d / "result.json").stat().st_size < 200_000
    # Bounded: two timeouts, and a few seconds for each of the others.
    assert graded["seconds"] < 2 * TIMEOUT + 30 * (len(ESCAPES) + 2)


@needs_bwrap
@needs_build
def test_without_the_sandbox_the_same_attempts_work(graded, tmp_path):
    """Without the sandbox (the runner still in a PID namespace, and `nobody`
    when the grader is root) reading the world-readable solutions works, opening
    a socket does where the runner has no network namespace of its own, and
    writing outside does where the runner is the grader's own user: the attempts
    are real, and the README says what --sandbox adds."""
    private_net = isolation.runner_namespaces().private_network
    names = ["read_solutions", "open_socket"] + (["write_outside"] if os.geteuid() != 0 else [])
    canary = tmp_path / "canary"
    canary.mkdir()
    canary.chmod(0o777 if os.geteuid() != 0 else 0o755)
    out = tmp_path / "out"
    listener = Listener()
    values = dict(
        graded["values"],
        CANARY=str(canary),
        PORT=str(listener.port),
        WORKER=str(out / "workers" / "w0" / "src"),
        OUT=str(out),
    )
    escapes = make_escapes.write_escapes(tmp_path / "subs", values, names)
    try:
        results, _, _ = run(escapes.values(), out)
    finally:
        listener.close()
    for name in names:
        lab = results[name].labs[0]
        if name == "open_socket" and private_net:
            assert lab.points == 0, lab  # loopback of its own: nobody listens there
            continue
        assert lab.status == "graded" and lab.points_correctness == lab.max_correctness, (name, lab)
    assert (listener.connections == 0) if private_net else (listener.connections > 0)


@needs_bwrap
def test_the_tests_and_tools_of_one_cell_share_a_checker(tmp_path):
    # In a sandboxed batch a GPU lab's untimed tests and its compute-sanitizer
    # tools run in one checker (shared_gpu.tests_then_tools): every pass must
    # start the same copy of the runner, as the same user, in the same folder,
    # and differ only in the tool in front of it.
    from grader.engine import sanitize
    from grader.engine.checker_passes import Pass, pass_args

    box = sandbox.Sandbox(sandbox.Limits(), timeout=30)
    try:
        cell = box.cell("ann")
        binary = tmp_path / "runner"
        binary.write_text("#!/bin/sh\n")
        env = {"LAB_GPU_WAIT": "block"}
        tests = Pass("tests", cell.runner(binary, env=env))
        tools = sanitize.tool_passes(binary, cell, sanitize.DEFAULT_TOOLS, env=env)
        common, args = pass_args([tests, *tools])
        assert common.prefix == tests.runner.prefix  # the bwrap wrapping, whole
        assert args[0] == "--pass=tests" and args[1].startswith("--pass=memcheck")
        assert sum(a == "--pass-prefix=--tool=racecheck" for a in args) == 1
    finally:
        box.cleanup()
