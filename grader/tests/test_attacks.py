"""The attack suite (tests/attacks/attacks.toml) on lab 01: every attempt to
get marks without the work is graded as the work it really is, between two
honest students who keep their points, with and without --sandbox.

Three batches: the default containment with the linked policy check on (what
an instructor runs: the attacks that call forbidden things are refused as
policy violations), and the default containment and the sandbox with the
policy check off, which shows that the checker/runner split holds on its own.
The default containment without the policy grades two students at a time
(--jobs-per-gpu 2): the untimed tests side by side, the timed ones held back
and run alone on the machine (grader/engine/sharing/gate.py).

Needs nvcc (the harness is built with meson); the sandboxed batch needs
bubblewrap. Each skips with the reason otherwise."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import honest

from grader.batch import orchestrator as batch, config as batch_config
from grader.infra import bwrap, isolation, sandbox
from grader.infra.toolchain import REPO

sys.path.insert(0, str(REPO / "tests" / "attacks"))
import judge  # noqa: E402
import make_attacks  # noqa: E402
from listener import Listener  # noqa: E402

LAB = "01_cpu_baseline"
ATTACKS = {a["name"]: a for a in make_attacks.load(LAB)}
TIMEOUT = 120
needs_build = pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="no nvcc: the harness cannot be built here"
)
NS_OK, NS_WHY = isolation.namespaces_available()
PRIVATE_NET = isolation.runner_namespaces().private_network
BOX_OK, BOX_WHY = bwrap.available()


def runner_processes() -> list[str]:
    """Processes still running a lab-01 runner: nothing may outlive its run."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "01_cpu_baseline-runner" in cmd:
            left.append(f"{pid} {cmd}")
    return left


def graded(tmp_path_factory, *, sandboxed: bool, policy: bool, jobs: int = 1) -> dict:
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc: the harness cannot be built here")
    if sandboxed and not BOX_OK:
        pytest.skip(f"no sandbox here: {BOX_WHY}")
    tmp = tmp_path_factory.mktemp("attacks")
    subs, out = tmp / "subs", tmp / "out"
    listener = Listener()
    specs = [honest(subs, "aaa_honest")]
    values = {"OUT": str(out), "PORT": str(listener.port)}
    specs += make_attacks.write_attacks(subs, values, LAB).values()
    specs.append(honest(subs, "zzz_honest"))
    config = batch_config.BatchConfig(
        out=out,
        lab_ids=["01"],
        gpus=[],
        perf=True,
        timeout=TIMEOUT,
        sandbox=sandboxed,
        linked_policy=policy,
        jobs_per_gpu=jobs,
        sandbox_limits=sandbox.Limits.parse(["processes=96", "memory_mb=4096"]),
    )
    messages: list[str] = []
    started = time.time()
    try:
        results = batch.run_batch([str(s) for s in specs], config, progress=messages.append)
    finally:
        listener.close()
    seconds = time.time() - started
    snapshot = {
        p: p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and "students" in p.parts or p.name == "gradebook.csv"
    }
    time.sleep(3)  # anything an attack left behind would have written by now
    return {
        "results": {r.student: r for r in results},
        "messages": messages,
        "out": out,
        "seconds": seconds,
        "snapshot": snapshot,
        "left": runner_processes(),
        "policy": policy,
        "reached": listener.connections,
        "private_network": sandboxed or PRIVATE_NET,
    }


@pytest.fixture(scope="module")
def contained_policy(tmp_path_factory):
    return graded(tmp_path_factory, sandboxed=False, policy=True)


@pytest.fixture(scope="module")
def contained_split(tmp_path_factory):
    return graded(tmp_path_factory, sandboxed=False, policy=False, jobs=2)


@pytest.fixture(scope="module")
def sandboxed_split(tmp_path_factory):
    return graded(tmp_path_factory, sandboxed=True, policy=False)


RUNS = ["contained_policy", "contained_split", "sandboxed_split"]


def check_attack(run: dict, name: str) -> None:
    if "unreached" in ATTACKS[name].get("check", []) and not run["private_network"]:
        pytest.skip(f"the runner has no network namespace of its own here: {NS_WHY or 'no --net'}")
    problems = judge.judge(
        ATTACKS[name], run["results"][name], run["out"], run["policy"], run["reached"]
    )
    assert not problems, problems


@needs_build
@pytest.mark.parametrize("run_name", RUNS)
@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_is_graded_as_its_real_work(request, run_name, name):
    check_attack(request.getfixturevalue(run_name), name)


@needs_build
@pytest.mark.parametrize("run_name", RUNS)
def test_honest_students_keep_their_points(request, run_name):
    run = request.getfixturevalue(run_name)
    for name in ("aaa_honest", "zzz_honest"):
        lab = run["results"][name].labs[0]
        assert lab.status == "graded" and lab.points_correctness == lab.max_correctness, lab
        assert lab.points_performance > 0, lab
    assert len(run["results"]) == len(ATTACKS) + 2


@needs_build
@pytest.mark.parametrize("run_name", RUNS)
def test_results_are_the_graders_and_nothing_outlives_a_run(request, run_name):
    run = request.getfixturevalue(run_name)
    out = run["out"]
    # Every gradebook row is the digest of the result.json beside it, as the grader wrote it.
    assert judge.judge_files(out) == []
    # Nothing changed after the batch ended, and no runner is left.
    for path, data in run["snapshot"].items():
        assert path.read_bytes() == data, path
    assert not (out / "escape-outlived").exists() or os.geteuid() != 0
    assert run["left"] == [] and runner_processes() == []
    forged = run["results"]["outlive_and_rewrite"].labs[0]
    assert forged.points == 0
