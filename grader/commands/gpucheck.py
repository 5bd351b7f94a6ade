"""`gpucheck`: the evidence run, on a machine with a GPU.

Builds everything, runs every lab's tests against the reference solution and
the untouched skeleton (bandwidth tests on), the meson suites that expect
failures (skeletons, mutants) and the CUB peer, benchmarks every reference beside
CUB (same process) over sizes 2^16..2^30, compares with the H200 anchors, runs
the studies the handouts quote (tests/tuning/*-study), and writes
OUT/gpucheck.json (GPU, driver, CUDA, commit, every test, every figure). The
last thing printed is a short table.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .. import labmeta
from ..infra import evidence
from ..engine import lab_grading, sanitize
from ..engine.checker_run import run_checker
from ..engine.scoring import score
from ..infra.evidence import (
    ANCHOR_SHARE,
    ANCHOR_SIZES,
    AnchorCheck,
    AnchorRow,
    BenchRun,
    BenchSize,
    CubCheck,
    CubRow,
    GpuCheck,
    ImplRun,
    LabEvidence,
    Machine,
    ScriptRun,
    Study,
)
from ..infra import isolation
from ..infra import toolchain as tools
from . import grade
from .selftest import summarize

BENCH_SIZES = [16, 18, 20, 22, 24, 26, 28, 30]


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


def bench_binaries(build_dir: Path, lab_id: str) -> list[Path]:
    """bench-<lab> or, for a lab with two contracts, bench-<lab>-sum and -max."""
    return sorted(p for p in (build_dir / "tests").glob(f"bench-{lab_id}*") if p.is_file())


def run_json(
    binary: Path, out_dir: Path, args: list[str], timeout: float = 900
) -> tuple[dict, int | None, bool, str]:
    """Runs `binary ARGS --json=FILE`: the JSON it wrote ({} if none), its exit code
    (None if it did not end), whether it timed out, and its output's tail."""
    path = out_dir / f"{binary.name}.json"
    from ..infra import proc

    done = proc.run([str(binary), *args, f"--json={path}"], timeout=timeout)
    output = done.output + (f" (timed out after {timeout} s)" if done.timed_out else "")
    report = json.loads(path.read_text()) if path.exists() else {}
    path.unlink(missing_ok=True)
    return report, done.code, done.timed_out, output[-3000:]


def bench(binary: Path, out_dir: Path) -> BenchRun:
    report, code, timed_out, output = run_json(
        binary, out_dir, [f"--sizes={','.join(map(str, BENCH_SIZES))}"]
    )
    try:
        run = evidence.as_record({"sizes": [], **report}, BenchRun, binary.name)
    except evidence.EvidenceError as e:
        # The run's other figures are worth more than this one: kept, with why.
        run, output = BenchRun(sizes=[]), f"{output}\n[gpucheck] report not read: {e}"
    run.exit_code, run.timed_out, run.output = code, timed_out, output
    return run


def studies(build_dir: Path, out_dir: Path) -> dict[str, Study]:
    """Every tests/tuning/*-study program: figures a handout quotes (lab 11's sort-first study)."""
    out = {}
    for p in sorted((build_dir / "tests" / "tuning").glob("*-study")):
        if p.is_file():
            report, code, timed_out, output = run_json(p, out_dir, [], timeout=600)
            out[p.name] = Study(code, output, report, timed_out)
    return out


def anchor_check(run: BenchRun, anchors: dict[int, float]) -> AnchorCheck:
    rows = {
        s.log2n: AnchorRow(round(s.gbps, 1), a, round(s.gbps / a, 3))
        for s in run.sizes
        if (a := anchors.get(s.log2n)) and s.ok and s.gbps is not None
    }
    # A lab without anchors (lab 10: no anchor was measured for it) has no such requirement.
    required = [k for k in ANCHOR_SIZES if k in anchors]
    ok = all(k in rows and rows[k].share >= ANCHOR_SHARE for k in required)
    return AnchorCheck(rows, ok, ANCHOR_SHARE, required)


def cub_check(run: BenchRun) -> CubCheck:
    """The lab against CUB at every size, both measured in the same process."""
    rows = {
        s.log2n: CubRow(
            round(s.gbps or 0.0, 1),
            round(s.cub_gbps or 0.0, 1),
            round((s.gbps or 0.0) / s.cub_gbps, 3) if s.cub_gbps else None,
        )
        for s in run.sizes
        if s.ok
    }
    ok = bool(rows) and all(r.ratio is not None and r.ratio >= 1.0 for r in rows.values())
    return CubCheck(rows, ok, min((r.ratio for r in rows.values() if r.ratio), default=None))


PARTS = ("labs", "suites", "bench", "profile", "attacks", "sandbox", "class")
PART_FIELDS = {"class": "class_run"}  # GpuCheck's field where the part is not a Python name


def run(
    out_dir: Path,
    build_dir: Path,
    arch: str,
    parts: tuple[str, ...] = PARTS,
    sandbox_labs: tuple[str, ...] = (),
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
        bad |= _labs(course, build_dir, ev, save)
    if "bench" in parts:
        bad |= _bench(course, build_dir, out_dir, ev, save)
    if "suites" in parts:
        print("[gpucheck] expected failures (skeletons, mutants) and peers ...", flush=True)
        # Correctness only (LAB_SKIP_PERF): three at a time fit the GPU's memory
        # with a 2^32-element case each.
        from ..infra import proc

        proc.run(
            meson
            + [
                "test",
                "-C",
                str(build_dir),
                "--no-rebuild",
                "--print-errorlogs",
                "--num-processes",
                "3",
                "--suite",
                "skeletons",
                "--suite",
                "mutants",
                "--suite",
                "peers",
                "--suite",
                "harness",
            ],
            timeout=3600,
        )
        testlog = build_dir / "meson-logs" / "testlog.json"
        suites = summarize(testlog) if testlog.exists() else {"failed": ["no meson log"]}
        ev.meson_suites = evidence.MesonSuites(**{"passed": [], **suites})
        if testlog.exists():
            ev.meson_log = [
                evidence.MesonTest(t["name"], t["result"], t.get("duration"), t.get("stdout"))
                for t in map(json.loads, testlog.read_text().splitlines())
            ]
        bad |= bool(ev.meson_suites.failed)
    scripts = (
        ("profile", lambda o, a: _profile(o, build_dir)),
        ("attacks", _attacks),
        (
            "sandbox",
            lambda o, a: _sandbox_batch(o, a, sandbox_labs or tuple(l.id for l in course.labs)),
        ),
        ("class", _class),
    )
    for part, script in scripts:
        if part in parts:
            print(f"[gpucheck] {part} ...", flush=True)
            result = script(out_dir, arch)
            setattr(ev, PART_FIELDS.get(part, part), result)
            bad |= result.exit_code != 0
    ev.seconds = round(time.time() - started, 1)
    save()
    print(summary_table(ev))
    return 1 if bad else 0


def _labs(course: labmeta.Course, build_dir: Path, ev: GpuCheck, save: Callable[[], None]) -> bool:
    bad = False
    labs = ev.labs if ev.labs is not None else {}
    for lab in course.labs:
        entry = labs.setdefault(lab.id, LabEvidence())
        checker = build_dir / "tests" / lab_grading.checker_target(lab)
        for impl in ("solutions", "labs"):
            print(f"[gpucheck] {lab.id} {impl} ...", flush=True)
            runner = build_dir / "tests" / lab_grading.runner_target(lab, impl)
            iso = isolation.contained()
            try:
                t0 = time.time()
                run_ = run_checker(
                    checker,
                    lab.id,
                    iso.runner(runner),
                    impl=impl,
                    timeout=900,
                    seed=lab_grading.new_seed(),
                    gpu_expected=lab.needs_gpu,
                )
                setattr(entry, impl, ImplRun(run_, score(lab, run_), round(time.time() - t0, 1)))
                if impl == "solutions" and lab.needs_gpu and sanitize.available():
                    # What the sanitizer adds to grading one lab (it runs by default).
                    t0 = time.time()
                    tools_run = sanitize.run_all(
                        checker,
                        lab.id,
                        runner,
                        iso,
                        tools=sanitize.RDC_TOOLS if lab.rdc else sanitize.DEFAULT_TOOLS,
                    )
                    entry.sanitizer = evidence.SanitizerRun(
                        round(time.time() - t0, 1), {t.tool: t.status for t in tools_run}
                    )
                    bad |= any(t.status != "clean" for t in tools_run)
            finally:
                iso.cleanup()
        sol, skel = entry.solutions, entry.labs
        assert sol is not None and skel is not None  # both ran above, or raised
        bad |= sol.run.status != "completed" or bool(sol.score.tests_failed)
        bad |= skel.score.points != 0
        save()
    for impl in ("labs", "solutions"):
        runs = [getattr(e, impl) for e in labs.values()]
        report = grade.GradeReport(
            commit=ev.machine.commit,
            date="",
            impl=impl,
            labs=[r.score for r in runs if r is not None],
        )
        setattr(
            ev,
            f"grade_output_{impl}",
            (grade.details(report) + "\n\n" + grade.table(report)).strip(),
        )
    return bad


def _bench(
    course: labmeta.Course, build_dir: Path, out_dir: Path, ev: GpuCheck, save: Callable[[], None]
) -> bool:
    bad = False
    labs = ev.labs if ev.labs is not None else {}
    for lab in course.labs:
        if not lab.needs_gpu:
            continue
        entry = labs.setdefault(lab.id, LabEvidence())
        print(f"[gpucheck] {lab.id} bench ...", flush=True)
        benches = {p.name: bench(p, out_dir) for p in bench_binaries(build_dir, lab.id)}
        entry.bench = benches
        # Anchors are for the lab's first contract: the int sum where it has two.
        main = next(
            (b for b in benches.values() if b.contract == "sum"),
            next(iter(benches.values()), BenchRun(sizes=[])),
        )
        entry.anchors = anchor_check(main, lab.anchor_gbps)
        entry.vs_cub = {name: cub_check(b) for name, b in benches.items()}
        save()
        bad |= not entry.anchors.meets_required_share
        bad |= lab.beats_cub and not all(
            v.at_or_above_cub_at_every_size
            for name, v in entry.vs_cub.items()
            if benches[name].contract == "sum"
        )
    # CUB runs beside every lab in its bench; its H200 anchors are checked on
    # the first bench of the same contract (int sum or float max).
    peers = {}
    for peer in course.peers:
        contract = "max" if peer.id.endswith("max") else "sum"
        source = next(
            (b for e in labs.values() for b in e.bench.values() if b.contract == contract),
            BenchRun(sizes=[]),
        )
        # CUB's own figures only: the lab's time and detail stay with the lab.
        cub = BenchRun(
            sizes=[BenchSize(s.log2n, s.n, s.status, gbps=s.cub_gbps) for s in source.sizes]
        )
        peers[peer.id] = evidence.PeerEvidence(cub, anchor_check(cub, peer.anchor_gbps))
    ev.peers = peers
    print("[gpucheck] studies ...", flush=True)
    ev.studies = studies(build_dir, out_dir)
    return bad or any(r.exit_code != 0 for r in ev.studies.values())


def _script(args: list[str], out_dir: Path, name: str, timeout: float = 1800) -> ScriptRun:
    """A repository script's run: exit code, output tail, and the JSON it wrote.
    Its whole output goes to OUT/NAME.log as it comes: a GPU call cut off by its
    time limit still shows how far the script got."""
    from ..infra import proc

    done = proc.run(
        [sys.executable, *args],
        timeout=timeout,
        cwd=tools.REPO,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        log=out_dir / f"{Path(name).stem}.log",
    )
    result = ScriptRun(
        command=" ".join(["python3", *args]),
        exit_code=done.code,
        seconds=round(done.seconds, 1),
        output=done.output[-6000:],
    )
    path = out_dir / name
    if path.exists():
        result.evidence = json.loads(path.read_text())
    print(done.output[-3000:], flush=True)
    return result


def _profile(out_dir: Path, build_dir: Path) -> ScriptRun:
    """Every reference under ncu (OUT/profile.json, the file a release reads), then
    what a student sees: 02-04 (solutions as theirs) and an untouched skeleton."""
    base = ["-m", "grader", "profile", "--build-dir", str(build_dir)]
    runs = {
        "references": (
            _script(
                base + ["--references", "--json", str(out_dir / "profile.json")],
                out_dir,
                "profile.json",
            ),
            0,
        ),
        "solutions_02_03_04": (
            _script(
                base
                + [
                    "02",
                    "03",
                    "04",
                    "--impl",
                    "solutions",
                    "--json",
                    str(out_dir / "profile-02-04.json"),
                ],
                out_dir,
                "profile-02-04.json",
            ),
            0,
        ),
        "skeleton_03": (
            _script(
                base + ["03", "--json", str(out_dir / "profile-skeleton.json")],
                out_dir,
                "profile-skeleton.json",
            ),
            1,
        ),
    }
    wrong = [k for k, (r, want) in runs.items() if r.exit_code != want]
    return ScriptRun(
        exit_code=1 if wrong else 0,
        seconds=round(sum(r.seconds for r, _ in runs.values()), 1),
        runs={k: r for k, (r, _) in runs.items()},
        output=(
            f"profile: unexpected exit in {', '.join(wrong)}"
            if wrong
            else "profile: references profiled, 02-04 shown, the skeleton refused"
        ),
    )


ATTACK_LABS = ("07_atomic_finish", "09_shuffle_vector_loads")


def _attacks(out_dir: Path, arch: str) -> ScriptRun:
    labs = [a for lab in ATTACK_LABS for a in ("--lab", lab)]
    result = _script(
        [
            "tests/attacks/run_attacks.py",
            str(out_dir),
            *labs,
            "--arch",
            arch,
            "--mode",
            "contained-policy",
            "--mode",
            "sandboxed-split",
        ],
        out_dir,
        "attacks.json",
    )
    result.evidence = {
        lab: json.loads((out_dir / f"attacks-{lab}.json").read_text())
        for lab in ATTACK_LABS
        if (out_dir / f"attacks-{lab}.json").exists()
    }
    return result


def _sandbox_batch(out_dir: Path, arch: str, labs_wanted: tuple[str, ...]) -> ScriptRun:
    """batch --sandbox of the reference solutions on this machine's own
    compilers: each lab must get full marks (and the preflight runs first).
    All eleven labs, preflight and student, take about 9 minutes on an H200,
    more than one GPU call may run: `--sandbox-labs` splits them over calls,
    and `--merge` joins the runs."""
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="sandbox-batch-"))
    shutil.copytree(tools.REPO / "solutions", work / "reference" / "labs")
    labs = [a for lab in labs_wanted for a in ("--lab", lab)]
    result = _script(
        [
            "-m",
            "grader",
            "batch",
            str(work / "reference"),
            "--out",
            str(work / "out"),
            "--sandbox",
            "--arch",
            arch,
            *labs,
        ],
        out_dir,
        "sandbox-batch",
    )
    res = (
        json.loads((work / "out" / "students" / "reference" / "result.json").read_text())
        if (work / "out" / "students" / "reference" / "result.json").exists()
        else {}
    )
    result.student = res
    result.batch = (
        json.loads((work / "out" / "batch.json").read_text())
        if (work / "out" / "batch.json").exists()
        else {}
    )
    graded = [l for l in res.get("labs", []) if l.get("lab") in labs_wanted]
    full = len(graded) == len(labs_wanted) and all(l["points"] == l["max_points"] for l in graded)
    result.labs_graded = sorted(l["lab"] for l in graded)
    if not full:
        result.exit_code = result.exit_code or 1
    result.full_marks = full
    return result


def _class(out_dir: Path, arch: str) -> ScriptRun:
    # 60 s per lab: the class's hanging kernel costs that much before it is killed.
    return _script(
        ["tests/submissions/run_class.py", str(out_dir), "--arch", arch, "--timeout", "60"],
        out_dir,
        "class-run.json",
    )


def course_beats_cub(lab_id: str) -> bool:
    try:
        return labmeta.load().lab(lab_id).beats_cub
    except KeyError:
        return False


def summary_table(ev: GpuCheck) -> str:
    lines = [
        f"GPU: {'; '.join(ev.machine.nvidia_smi)}  commit {ev.machine.commit}"
        f"  parts {','.join(ev.parts or [])}"
    ]
    labs = ev.labs or {}
    if labs:
        lines.append(
            f"{'lab':28} {'solution':>10} {'skeleton':>16} {'fraction':>9} "
            f"{'thresh':>7} {'sanitizer':>10} {'2^28 GB/s':>10} {'anchor':>7}"
        )
    for lab_id, e in labs.items():
        cells = []
        if e.solutions and e.labs:
            sol, skel = e.solutions.score, e.labs.score
            hint = skel.first_failure.hint if skel.first_failure else ""
            cells += [
                f"{sol.tests_passed}/{sol.tests_passed + sol.tests_failed}",
                f"fails:{hint}" if skel.tests_failed else "PASSES?!",
                "-" if sol.fraction is None else f"{sol.fraction:.3f}",
                f"{sol.threshold:.3f}",
            ]
        else:
            cells += ["", "", "", ""]
        cells.append(f"{e.sanitizer.seconds:.0f} s" if e.sanitizer else "")
        r = e.anchors.sizes.get(28) if e.anchors else None
        cells += [f"{r.gbps:.0f}" if r else "-", f"{r.anchor:.0f}" if r else "-"]
        lines.append(
            f"{lab_id:28} "
            + " ".join(f"{c:>{w}}" for c, w in zip(cells, (10, 16, 9, 7, 10, 10, 7)))
        )
    for lab_id, e in labs.items():
        for name, v in e.vs_cub.items():
            if course_beats_cub(lab_id):
                lines.append(
                    f"{name}: lowest ratio to CUB {v.lowest_ratio}, at or above CUB "
                    f"at every size: {v.at_or_above_cub_at_every_size}"
                    + (
                        ""
                        if e.bench[name].contract == "sum"
                        else " (float max: reported, not required)"
                    )
                )
    for name, st in (ev.studies or {}).items():
        lines.append(
            f"{name}: exit {st.exit_code}; " + (st.output.strip().splitlines() or [""])[-1]
        )
    if ev.meson_suites:
        s = ev.meson_suites
        lines.append(
            f"meson suites skeletons/mutants/peers/harness: {len(s.passed)} passed, "
            f"{len(s.failed)} failed, {len(s.skipped)} skipped"
            + (f" (failed: {', '.join(s.failed)})" if s.failed else "")
        )
    for part in ("profile", "attacks", "sandbox", "class"):
        run = getattr(ev, PART_FIELDS.get(part, part))
        if run:
            lines.append(
                f"{part}: exit {run.exit_code} in {run.seconds:.0f} s; "
                + (run.output.strip().splitlines() or [""])[-1]
            )
    return "\n".join(lines)
