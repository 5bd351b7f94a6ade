"""`gpucheck`: the evidence run, on a machine with a GPU.

Builds everything, runs every lab's tests against the reference solution and
the untouched skeleton (bandwidth tests on), the meson suites that expect
failures (skeletons, mutants) and the CUB peer, benchmarks every reference beside
CUB (same process) over sizes 2^16..2^30, compares with the H200 anchors, runs
the studies the handouts quote (tests/tuning/*-study), and writes
OUT/gpucheck.json (GPU, driver, CUDA, commit, every test, every figure). The
last thing printed is a short table.

This module is the driver: which parts run, the machine's description
(`bench` and `calibrate` record theirs with it too), and the evidence file,
saved as it grows. What each part does is in gpucheck.correctness (labs,
suites), gpucheck.bench (bench) and gpucheck.scripts (profile, attacks,
sandbox, class); the table in gpucheck.summary.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path

from .. import labmeta
from ..infra import evidence
from ..infra import toolchain as tools
from ..infra.evidence import GpuCheck, Machine
from ..gpucheck import scripts
from ..gpucheck.bench import bench_part
from ..gpucheck.correctness import labs_part, suites_part
from ..gpucheck.summary import summary_table

PARTS = ("labs", "suites", "bench", *scripts.SCRIPT_PARTS)


def _run(cmd: list[str], timeout: float = 120) -> str:
    from ..infra import proc

    try:
        done = proc.run(cmd, timeout=timeout)
    except OSError:
        return ""
    return done.output.strip() if done.ok else ""


def machine() -> Machine:
    smi = _run(
        [
            "nvidia-smi",
            "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem",
            "--format=csv,noheader",
        ]
    )
    nvcc = _run(["nvcc", "--version"]).splitlines()
    return Machine(
        nvidia_smi=smi.splitlines(),
        nvcc=nvcc[-1] if nvcc else "",
        commit=tools.git_commit(),
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        host_cpus=_run(["nproc"]),
    )


def run(
    out_dir: Path,
    build_dir: Path,
    arch: str,
    parts: tuple[str, ...] = PARTS,
    sandbox_labs: tuple[str, ...] = (),
    attack_labs: tuple[str, ...] = (),
) -> int:
    """The evidence run, or some of its parts (a GPU call has a time limit):
    labs (every solution and skeleton through its checker, the sanitizer's
    cost), suites (the meson suites that expect failures: skeletons, mutants,
    peers), bench (every reference and CUB over sizes, the studies), profile
    (every reference under Nsight Compute: the committed run a student release
    reads; `profile` of 02-04 and of an untouched skeleton as a student sees it), attacks
    (tests/attacks on labs 07 and 09, with and without --sandbox), sandbox (batch
    --sandbox of the reference solutions, one lab per contract kind), class
    (the class of ten)."""
    started = time.time()
    out_dir.mkdir(parents=True, exist_ok=True)
    meson = tools.ensure_tools()
    tools.configure(build_dir, [f"-Dgpu_arch={arch}"])
    ev = GpuCheck(
        machine=machine(),
        parts=list(parts),
        command=f"python3 -m grader gpucheck --out OUT --parts {','.join(parts)}",
    )

    def save() -> None:
        evidence.dump(ev, out_dir / "gpucheck.json")

    built = tools.build(build_dir)
    ev.build = evidence.Build(
        ok=built.ok, seconds=round(built.seconds, 1), log_tail=built.log[-3000:]
    )
    if not built.ok:
        save()
        print(built.log[-6000:])
        return 1
    course = labmeta.load()
    bad = False
    if "labs" in parts or "bench" in parts:
        ev.labs = {}
    # Saved as it grows: a run cut short by a time limit still leaves its evidence.
    if "labs" in parts:
        bad |= labs_part(course, build_dir, ev, save)
    if "bench" in parts:
        bad |= bench_part(course, build_dir, out_dir, ev, save)
    if "suites" in parts:
        bad |= suites_part(meson, build_dir, ev)
    # Lab 12 spans GPUs: a batch (one GPU a worker) says "not graded", never full marks.
    checked = tuple(l.id for l in course.labs if not l.spans_gpus)
    script_parts = (
        ("profile", lambda o, a: scripts.profile_part(o, build_dir)),
        ("attacks", lambda o, a: scripts.attacks_part(o, a, attack_labs or scripts.ATTACK_LABS)),
        (
            "sandbox",
            lambda o, a: scripts.sandbox_part(o, a, sandbox_labs or checked),
        ),
        ("class", scripts.class_part),
    )
    for part, script in script_parts:
        if part in parts:
            print(f"[gpucheck] {part} ...", flush=True)
            result = script(out_dir, arch)
            setattr(ev, scripts.PART_FIELDS.get(part, part), result)
            bad |= result.exit_code != 0
    ev.seconds = round(time.time() - started, 1)
    save()
    print(summary_table(ev))
    return 1 if bad else 0
