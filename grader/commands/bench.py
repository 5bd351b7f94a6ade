"""`bench`: every GPU lab's reference solution beside CUB DeviceReduce, over
sizes 2^16 to 2^30 (as memory allows), to JSON and plots (PNG and SVG), and a
table of each one's time over its floor, which says where a call beats it."""

from __future__ import annotations

from pathlib import Path

from .. import labmeta
from ..infra import evidence, log
from ..infra.evidence import BenchFile, BenchRun
from ..infra import toolchain as tools
from .gpucheck import machine
from ..gpucheck.bench import bench as run_bench
from ..gpucheck.bench import bench_binaries, floor_table


def collect(build_dir: Path, out_dir: Path, progress=log.progress) -> dict[str, BenchRun]:
    course = labmeta.load()
    results = {}
    for lab in course.labs:
        if not lab.needs_gpu or lab.spans_gpus:
            continue  # lab 12's bench (several GPUs, NCCL): tests/gpu_runs/lab12_gpu.sh
        for binary in bench_binaries(build_dir, lab.id):
            progress(f"[bench] {binary.name} ...")
            results[binary.name] = run_bench(binary, out_dir)
            results[binary.name].lab = lab.id
    return results


def _ys(values: list[float | None]) -> list[float]:
    """A figure not measured as NaN: matplotlib leaves a gap there, as for None."""
    return [float("nan") if v is None else v for v in values]


def plot(results: dict[str, BenchRun], out_dir: Path) -> list[Path]:
    """Bandwidth against size, and each lab's best against the copy ceiling."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    fig, ax = plt.subplots(figsize=(9, 5.5))
    cub_drawn = set()
    for name, r in results.items():
        rows = [s for s in r.sizes if s.ok]
        if not rows:
            continue
        ax.plot(
            [s.log2n for s in rows],
            _ys([s.gbps for s in rows]),
            marker="o",
            ms=3,
            label=name.removeprefix("bench-"),
        )
        contract = r.contract or "sum"
        if contract not in cub_drawn:
            ax.plot(
                [s.log2n for s in rows],
                _ys([s.cub_gbps for s in rows]),
                "k--" if contract == "sum" else "k:",
                lw=1.5,
                label=f"CUB {contract}",
            )
            cub_drawn.add(contract)
    # The floor as GB/s (the larger of an empty kernel's launch and the bytes at
    # peak, measured beside each size): no call can read faster.
    floor_run = next((r for r in results.values() if any(s.floor_us for s in r.sizes)), None)
    if floor_run:
        rows = [s for s in floor_run.sizes if s.floor_us]
        ax.plot(
            [s.log2n for s in rows],
            _ys([s.floor_gbps for s in rows]),
            ":",
            color="tab:red",
            lw=1.2,
            label="floor as GB/s",
        )
    ceiling = next((r.ceiling_gbps for r in results.values() if r.ceiling_gbps), None)
    if ceiling:
        ax.axhline(ceiling, color="grey", lw=0.8)
        ax.text(16.1, ceiling * 1.01, f"device-to-device copy {ceiling:.0f} GB/s", fontsize=8)
    device = next((r.device for r in results.values() if r.device), "")
    ax.set(xlabel="log2(elements)", ylabel="GB/s of input read", title=f"Reductions on {device}")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    for ext in ("png", "svg"):
        path = out_dir / f"bandwidth_vs_size.{ext}"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        written.append(path)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 4.5))
    names, values = [], []
    for name, r in results.items():
        ok = [s for s in r.sizes if s.ok and s.gbps is not None]
        if ok and r.ceiling_gbps:
            names.append(name.removeprefix("bench-"))
            values.append((ok[-1].gbps or 0.0) / r.ceiling_gbps)
    ax.barh(names, values, color="tab:blue")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set(
        xlabel="largest size: GB/s read / copy ceiling (read + written)",
        title="Each lab's reference against the copy ceiling",
    )
    ax.invert_yaxis()
    for ext in ("png", "svg"):
        path = out_dir / f"fraction_of_ceiling.{ext}"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        written.append(path)
    plt.close(fig)
    return written


def run(out_dir: Path, build_dir: Path, arch: str, progress=log.progress) -> int:
    from ..infra.gpus import visible_gpus

    if not visible_gpus():
        print("bench needs an NVIDIA GPU (nvidia-smi lists none here): nothing measured")
        return 4
    tools.configure(build_dir, [f"-Dgpu_arch={arch}"])
    built = tools.build(build_dir)
    if not built.ok:
        print(built.first_errors)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    results = collect(build_dir, out_dir, progress)
    evidence.dump(BenchFile(results, machine=machine()), out_dir / "bench.json")
    plots = plot(results, out_dir)
    print(floor_table(results))
    print(
        f"[bench] {out_dir / 'bench.json'}"
        + ("" if plots else " (matplotlib not installed: no plots)")
    )
    for p in plots:
        print(f"[bench] {p}")
    return 0
