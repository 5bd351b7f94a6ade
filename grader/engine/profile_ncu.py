"""Nsight Compute for `grader profile`: run one binary under ncu, read the
counters from its CSV, and turn them into the metrics a student reads, each
with what it means."""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..infra import proc, toolchain
from ..status import ProfileStatus

DEFAULT_LOG2N = 25  # 128 MiB of ints: more than any L2, so DRAM is what is measured
EXIT_NO_GPU = 4
EXIT_NO_PERMISSION = 5
PERMISSION_HELP = """\
Nsight Compute may not read this GPU's performance counters (ERR_NVGPUCTRPERM):
the driver lets only administrators profile. Either
  - run the command as root (sudo -E env PATH="$PATH" python3 -m grader profile NN), or
  - allow every user, once, as root:
      echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' > /etc/modprobe.d/nvidia-profiling.conf
    then reboot (or reload the nvidia kernel module).
On a shared machine, ask its administrator. More: https://developer.nvidia.com/ERR_NVGPUCTRPERM"""


# Counters collected from every kernel of the call. Percentages and per-cycle
# ratios are averaged weighted by the kernel's time; counts are summed.
TIME = "gpu__time_duration.sum"
COUNTERS = (
    TIME,
    "dram__bytes_read.sum",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed_pred_on.sum",
    "smsp__sass_branch_targets.sum",
    "smsp__sass_branch_targets_threads_uniform.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed_op_global_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_inst_executed_op_global_red.sum",
    "smsp__sass_inst_executed_op_global_atom.sum",
)
TIME_WEIGHTED = (
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


@dataclass(frozen=True)
class Metric:
    label: str
    means: str
    value: Callable[[dict, int, int], float | None]  # (counters, n, kernels)
    digits: int = 1


# What a student can read in the table. Every lab shows COMMON; labs.toml's
# `profile` names the rest (the counters behind each lab's lesson).
METRICS: dict[str, Metric] = {
    "time_us": Metric(
        "GPU time of one call (us)",
        "all kernels of one call, back to back (launch gaps not included)",
        lambda c, n, k: c[TIME] / 1e3,
    ),
    "kernels": Metric(
        "kernels per call",
        "each launch costs about 3 us whatever it does: at small sizes launches are the cost",
        lambda c, n, k: k,
        0,
    ),
    "dram_pct": Metric(
        "DRAM throughput, % of peak",
        "how close the call came to the memory's peak: a reduction reads each byte once, so "
        "this is the figure to push towards 90%",
        lambda c, n, k: c["dram__throughput.avg.pct_of_peak_sustained_elapsed"],
    ),
    "dram_bytes_per_element": Metric(
        "DRAM bytes read per element",
        "the element's own size means each input came from memory once; more means a pass "
        "read data again",
        lambda c, n, k: c["dram__bytes_read.sum"] / n,
        2,
    ),
    "branch_uniform_pct": Metric(
        "uniform branches, %",
        "branches where every active thread of the warp went the same way; a divergent warp "
        "runs both sides, one after the other (ncu's "
        "smsp__sass_average_branch_targets_threads_uniform, over all kernels); '-': no branch "
        "at all, the compiler predicated every condition (idle lanes show in the next row)",
        lambda c, n, k: _pct(
            c["smsp__sass_branch_targets_threads_uniform.sum"], c["smsp__sass_branch_targets.sum"]
        ),
    ),
    "active_threads": Metric(
        "working threads per warp instruction (of 32)",
        "threads whose predicate is on in each instruction issued; a warp whose threads idle "
        "through a tree step still spends the whole issue slot",
        lambda c, n, k: _ratio(
            c["smsp__thread_inst_executed_pred_on.sum"], c["smsp__inst_executed.sum"]
        ),
    ),
    "bank_conflicts": Metric(
        "shared-memory bank conflicts",
        "extra passes the shared memory made, loads and stores, because threads of one warp "
        "hit the same bank at different addresses",
        lambda c, n, k: (
            c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
            + c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]
        ),
        0,
    ),
    "inst_per_32": Metric(
        "warp instructions per 32 elements",
        "what one warp's worth of input costs in issued instructions; a memory-bound kernel "
        "keeps it small enough that memory, not issue, sets the pace",
        lambda c, n, k: c["smsp__inst_executed.sum"] * 32 / n,
    ),
    "issue_busy_pct": Metric(
        "issue slots busy, %",
        "share of cycles a scheduler issued an instruction: near 100% the instructions, not "
        "the memory, are the limit",
        lambda c, n, k: c["smsp__issue_active.avg.pct_of_peak_sustained_active"],
    ),
    "occupancy_pct": Metric(
        "active warps, % of the SM's maximum",
        "achieved occupancy: the more warps resident, the more loads can be in flight to hide "
        "the memory's latency",
        lambda c, n, k: c["sm__warps_active.avg.pct_of_peak_sustained_active"],
    ),
    "waiting_on_memory": Metric(
        "warps waiting on a load, per issued instruction",
        "how many warps sat waiting for global memory each time one instruction issued: high "
        "with low DRAM throughput means too few bytes in flight to cover the latency",
        lambda c, n, k: c[
            "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
        ],
        2,
    ),
    "bytes_per_load": Metric(
        "bytes per warp load instruction",
        "128 is one 4-byte value per thread; 512 is a 16-byte vector load per thread, a "
        "quarter of the instructions for the same bytes",
        lambda c, n, k: _ratio(
            c["l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"],
            c["smsp__inst_executed_op_global_ld.sum"],
        ),
        0,
    ),
    "atomics": Metric(
        "global atomic instructions (per warp)",
        "atomic updates sent to global memory in one call; each block's one atomicAdd is "
        "cheap, one per thread is not",
        lambda c, n, k: (
            c["smsp__sass_inst_executed_op_global_red.sum"]
            + c["smsp__sass_inst_executed_op_global_atom.sum"]
        ),
        0,
    ),
}
COMMON = ("time_us", "kernels", "dram_pct", "dram_bytes_per_element")


def _pct(a: float, b: float) -> float | None:
    return 100.0 * a / b if b else None


class ProfileError(RuntimeError):
    """ncu could not profile (the message says why); exit_code says how to exit."""

    def __init__(self, message: str, exit_code: int = 3):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Kernel:
    name: str
    grid: str
    block: str
    counters: dict[str, float]


@dataclass
class Profile:
    """One call of one bench program under ncu."""

    name: str  # the bench's name: lab id, and -sum/-max where a lab has two
    source: str  # yours | reference (live) | the committed run's GPU and commit
    status: ProfileStatus
    log2n: int = DEFAULT_LOG2N
    device: str = ""
    detail: str = ""
    kernels: list[Kernel] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float | None] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict) -> "Profile":
        d = dict(d)
        d["kernels"] = [Kernel(**k) for k in d.get("kernels", [])]
        return cls(**d)


def find_ncu() -> str:
    """ncu on PATH, else beside nvcc, else in the usual toolkit folder."""
    found = shutil.which("ncu")
    if found:
        return found
    nvcc = shutil.which("nvcc")
    candidates = [Path(nvcc).resolve().parent / "ncu"] if nvcc else []
    candidates.append(Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "ncu")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise toolchain.SetupError(
        "Nsight Compute (ncu) was not found: it comes with the CUDA toolkit "
        "(bin/ncu, or the nsight-compute package); put it on PATH"
    )


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def parse_csv(text: str) -> list[Kernel]:
    """ncu's `--csv --page raw` report: a header row ("ID", ...), a row of units,
    then one row per kernel. Other lines (==PROF==, warnings) are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    kernels = []
    for row in rows[1:]:
        if len(row) != len(header):
            continue
        d = dict(zip(header, row))
        if not d.get("ID", "").strip().isdigit():
            continue  # the units row
        counters = {
            m: v for m in COUNTERS + TIME_WEIGHTED if m in d and (v := _number(d[m])) is not None
        }
        kernels.append(
            Kernel(
                d.get("Kernel Name", "?"), d.get("Grid Size", ""), d.get("Block Size", ""), counters
            )
        )
    return kernels


def combine(kernels: list[Kernel]) -> dict[str, float]:
    """One call's counters: counts summed, rates weighted by each kernel's time."""
    total: dict[str, float] = {}
    time = sum(k.counters.get(TIME, 0.0) for k in kernels)
    for m in COUNTERS:
        total[m] = sum(k.counters.get(m, 0.0) for k in kernels)
    for m in TIME_WEIGHTED:
        total[m] = (
            (sum(k.counters.get(m, 0.0) * k.counters.get(TIME, 0.0) for k in kernels) / time)
            if time
            else 0.0
        )
    return total


def metrics_of(counters: dict[str, float], n: int, kernels: int) -> dict[str, float | None]:
    return {key: m.value(counters, n, kernels) for key, m in METRICS.items()}


def profile_binary(
    binary: Path, source: str, log2n: int = DEFAULT_LOG2N, timeout: float = 600
) -> Profile:
    """One call of `binary` under ncu. ProfileError for what is not the code's fault
    (no GPU, no permission, ncu failing); a wrong or unimplemented result is a
    Profile with that status."""
    ncu = find_ncu()
    with tempfile.TemporaryDirectory(prefix="lab-profile-") as tmp:
        log, out = Path(tmp) / "ncu.csv", Path(tmp) / "bench.json"
        # --clock-control none: the GPU's own clocks, as in the graded runs (ncu
        # would lock them to base and every figure would drift from the GB/s).
        cmd = [
            ncu,
            "--profile-from-start",
            "off",
            "--clock-control",
            "none",
            "--csv",
            "--page",
            "raw",
            "--print-units",
            "base",
            "--log-file",
            str(log),
            "--metrics",
            ",".join(COUNTERS + TIME_WEIGHTED),
            str(binary),
            f"--profile={log2n}",
            f"--json={out}",
        ]
        done = proc.run(cmd, timeout=timeout)
        report = log.read_text(errors="replace") if log.exists() else ""
        said = json.loads(out.read_text()) if out.exists() else {}
    everything = report + "\n" + done.output
    if "ERR_NVGPUCTRPERM" in everything:
        raise ProfileError(PERMISSION_HELP, EXIT_NO_PERMISSION)
    if done.code == 77 or "SKIP " in done.output and not said:
        raise ProfileError(f"no usable NVIDIA GPU here: {done.output.strip()[-300:]}", EXIT_NO_GPU)
    if done.timed_out:
        return Profile(
            binary.name,
            source,
            ProfileStatus.ERROR,
            log2n,
            detail=f"timed out after {timeout:.0f} s (an endless loop?)",
        )
    # A word the harness never prints is no verdict: an error, like no word at all.
    status = next((s for s in ProfileStatus if s == said.get("status")), ProfileStatus.ERROR)
    kernels = parse_csv(report)
    p = Profile(
        said.get("name", binary.name),
        source,
        status,
        log2n,
        device=said.get("device", ""),
        detail=said.get("detail", ""),
        kernels=kernels,
    )
    if status == ProfileStatus.NOT_IMPLEMENTED:
        return p
    if not kernels:
        p.status = ProfileStatus.ERROR
        p.detail = (
            (p.detail + " " if p.detail else "")
            + "ncu profiled no kernel: "
            + _last_lines(everything)
        )
        return p
    p.counters = combine(kernels)
    p.metrics = metrics_of(p.counters, 1 << log2n, len(kernels))
    return p


def _last_lines(text: str, n: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])
