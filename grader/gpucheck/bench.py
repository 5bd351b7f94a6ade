"""gpucheck's bench part: every GPU lab's reference beside CUB (same process)
over sizes 2^16..2^30, held against the H200 anchors, and the studies the
handouts quote. Its own module because `grader bench` runs the same programs
the same way (bench, bench_binaries) without the rest of the evidence run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .. import labmeta
from ..infra import evidence
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
    LabEvidence,
    Study,
)

BENCH_SIZES = [16, 18, 20, 22, 24, 26, 28, 30]


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
    run.floor_below_all = run.floor_check()
    return run


def _over_floor(s: BenchSize, ms: float | None) -> str:
    return f"{ms * 1e3 / s.floor_us:.2f}" if ms and s.ok and s.floor_us else "-"


def floor_table(benches: dict[str, BenchRun]) -> str:
    """Each bench's time over its floor by size, lab and CUB, and the check: a
    floor is a lower bound only if no timed call beats it (below 1.00)."""
    sizes = sorted({s.log2n for b in benches.values() for s in b.sizes if s.floor_us})
    if not sizes:
        return "no bench recorded a floor"
    lines = [
        "time over the floor (the least a call can cost: below 1.00 the floor is beaten)",
        f"{'bench':34} {'':3} " + " ".join(f"{'2^' + str(k):>6}" for k in sizes),
    ]
    for name, b in benches.items():
        for who in ("lab", "cub"):
            cells = []
            for k in sizes:
                s = b.at(k)
                ms = None if s is None else s.median_ms if who == "lab" else s.cub_median_ms
                cells.append("-" if s is None else _over_floor(s, ms))
            label = name.removeprefix("bench-") if who == "lab" else ""
            lines.append(f"{label:34} {who:3} " + " ".join(f"{c:>6}" for c in cells))
    return "\n".join(lines + floor_lines(benches))


def floor_lines(benches: dict[str, BenchRun]) -> list[str]:
    """The floor check in words: one line where the floor holds for every bench,
    else one line per bench where a call beats it, with the sizes and calls."""
    beaten = []
    for name, b in benches.items():
        where = {k: v for k, v in (b.floor_check() or {}).items() if v}
        if where:
            at = ", ".join(f"2^{k} ({' and '.join(v)})" for k, v in sorted(where.items()))
            beaten.append(f"{name}: FLOOR BEATEN at {at}: it is not a lower bound there")
    if beaten:
        return beaten
    floored = [b for b in benches.values() if b.floor_check()]
    if not floored:
        return []
    old = any(b.floor_below_all is None for b in floored)
    return [
        "floor: at or below every timed call of every bench at every size"
        + (" (a run older than the check: its floor re-read from its figures)" if old else "")
    ]


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


def bench_part(
    course: labmeta.Course, build_dir: Path, out_dir: Path, ev: GpuCheck, save: Callable[[], None]
) -> bool:
    """True where a lab misses its anchors, one that must beat CUB does not, or
    a study fails."""
    bad = False
    labs = ev.labs if ev.labs is not None else {}
    for lab in course.labs:
        if not lab.needs_gpu or lab.spans_gpus:
            continue  # lab 12's bench (several GPUs, NCCL): tests/gpu_runs/lab12_gpu.sh
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
    print(floor_table({n: b for e in labs.values() for n, b in e.bench.items()}), flush=True)
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
