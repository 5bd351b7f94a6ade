"""`profile NN`: the student's kernel under Nsight Compute (ncu), beside the
reference solution and the previous lab's, on the few metrics the lab is about.

GB/s says how fast a kernel is; these counters say why. Each lab's bench
program (tests/bench/bench_main.cu) runs one checked call and then one more
between cudaProfilerStart and cudaProfilerStop; `ncu --profile-from-start off`
measures exactly the kernels of that call, and the counters are summed over
them (ratios from summed counters, percentages weighted by each kernel's time).

Where the reference solutions are present (the instructor's repository) they
are profiled live on the same GPU; in a student release the reference columns
come from the committed run REFERENCE_RUN, labelled with its GPU.

Exit codes beside the grader's usual ones (grader/cli.py): 4 no GPU here,
5 this user may not read the GPU's performance counters (ERR_NVGPUCTRPERM)."""
from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .. import labmeta
from ..infra import proc, toolchain
from ..status import ProfileStatus

REFERENCE_RUN = toolchain.REPO / "tests" / "gpu_runs" / "h200" / "profile.json"
DEFAULT_LOG2N = 25     # 128 MiB of ints: more than any L2, so DRAM is what is measured
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
    value: Callable[[dict, int, int], float | None]   # (counters, n, kernels)
    digits: int = 1


# What a student can read in the table. Every lab shows COMMON; labs.toml's
# `profile` names the rest (the counters behind each lab's lesson).
METRICS: dict[str, Metric] = {
    "time_us": Metric(
        "GPU time of one call (us)",
        "all kernels of one call, back to back (launch gaps not included)",
        lambda c, n, k: c[TIME] / 1e3),
    "kernels": Metric(
        "kernels per call",
        "each launch costs about 3 us whatever it does: at small sizes launches are the cost",
        lambda c, n, k: k, 0),
    "dram_pct": Metric(
        "DRAM throughput, % of peak",
        "how close the call came to the memory's peak: a reduction reads each byte once, so "
        "this is the figure to push towards 90%",
        lambda c, n, k: c["dram__throughput.avg.pct_of_peak_sustained_elapsed"]),
    "dram_bytes_per_element": Metric(
        "DRAM bytes read per element",
        "the element's own size means each input came from memory once; more means a pass "
        "read data again",
        lambda c, n, k: c["dram__bytes_read.sum"] / n, 2),
    "branch_uniform_pct": Metric(
        "uniform branches, %",
        "branches where every active thread of the warp went the same way; a divergent warp "
        "runs both sides, one after the other (ncu's "
        "smsp__sass_average_branch_targets_threads_uniform, over all kernels); '-': no branch "
        "at all, the compiler predicated every condition (idle lanes show in the next row)",
        lambda c, n, k: _pct(c["smsp__sass_branch_targets_threads_uniform.sum"],
                             c["smsp__sass_branch_targets.sum"])),
    "active_threads": Metric(
        "working threads per warp instruction (of 32)",
        "threads whose predicate is on in each instruction issued; a warp whose threads idle "
        "through a tree step still spends the whole issue slot",
        lambda c, n, k: _ratio(c["smsp__thread_inst_executed_pred_on.sum"],
                               c["smsp__inst_executed.sum"])),
    "bank_conflicts": Metric(
        "shared-memory bank conflicts",
        "extra passes the shared memory made, loads and stores, because threads of one warp "
        "hit the same bank at different addresses",
        lambda c, n, k: c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
        + c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"], 0),
    "inst_per_32": Metric(
        "warp instructions per 32 elements",
        "what one warp's worth of input costs in issued instructions; a memory-bound kernel "
        "keeps it small enough that memory, not issue, sets the pace",
        lambda c, n, k: c["smsp__inst_executed.sum"] * 32 / n),
    "issue_busy_pct": Metric(
        "issue slots busy, %",
        "share of cycles a scheduler issued an instruction: near 100% the instructions, not "
        "the memory, are the limit",
        lambda c, n, k: c["smsp__issue_active.avg.pct_of_peak_sustained_active"]),
    "occupancy_pct": Metric(
        "active warps, % of the SM's maximum",
        "achieved occupancy: the more warps resident, the more loads can be in flight to hide "
        "the memory's latency",
        lambda c, n, k: c["sm__warps_active.avg.pct_of_peak_sustained_active"]),
    "waiting_on_memory": Metric(
        "warps waiting on a load, per issued instruction",
        "how many warps sat waiting for global memory each time one instruction issued: high "
        "with low DRAM throughput means too few bytes in flight to cover the latency",
        lambda c, n, k: c["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active"
                          ".ratio"], 2),
    "bytes_per_load": Metric(
        "bytes per warp load instruction",
        "128 is one 4-byte value per thread; 512 is a 16-byte vector load per thread, a "
        "quarter of the instructions for the same bytes",
        lambda c, n, k: _ratio(c["l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum"],
                               c["smsp__inst_executed_op_global_ld.sum"]), 0),
    "atomics": Metric(
        "global atomic instructions (per warp)",
        "atomic updates sent to global memory in one call; each block's one atomicAdd is "
        "cheap, one per thread is not",
        lambda c, n, k: c["smsp__sass_inst_executed_op_global_red.sum"]
        + c["smsp__sass_inst_executed_op_global_atom.sum"], 0),
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
    name: str                  # the bench's name: lab id, and -sum/-max where a lab has two
    source: str                # yours | reference (live) | the committed run's GPU and commit
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


# --- ncu ---------------------------------------------------------------------------

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
    raise toolchain.SetupError("Nsight Compute (ncu) was not found: it comes with the CUDA toolkit "
                           "(bin/ncu, or the nsight-compute package); put it on PATH")


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
            continue    # the units row
        counters = {m: v for m in COUNTERS + TIME_WEIGHTED
                    if m in d and (v := _number(d[m])) is not None}
        kernels.append(Kernel(d.get("Kernel Name", "?"), d.get("Grid Size", ""),
                              d.get("Block Size", ""), counters))
    return kernels


def combine(kernels: list[Kernel]) -> dict[str, float]:
    """One call's counters: counts summed, rates weighted by each kernel's time."""
    total: dict[str, float] = {}
    time = sum(k.counters.get(TIME, 0.0) for k in kernels)
    for m in COUNTERS:
        total[m] = sum(k.counters.get(m, 0.0) for k in kernels)
    for m in TIME_WEIGHTED:
        total[m] = (sum(k.counters.get(m, 0.0) * k.counters.get(TIME, 0.0) for k in kernels)
                    / time) if time else 0.0
    return total


def metrics_of(counters: dict[str, float], n: int, kernels: int) -> dict[str, float | None]:
    return {key: m.value(counters, n, kernels) for key, m in METRICS.items()}


def profile_binary(binary: Path, source: str, log2n: int = DEFAULT_LOG2N,
                   timeout: float = 600) -> Profile:
    """One call of `binary` under ncu. ProfileError for what is not the code's fault
    (no GPU, no permission, ncu failing); a wrong or unimplemented result is a
    Profile with that status."""
    ncu = find_ncu()
    with tempfile.TemporaryDirectory(prefix="lab-profile-") as tmp:
        log, out = Path(tmp) / "ncu.csv", Path(tmp) / "bench.json"
        # --clock-control none: the GPU's own clocks, as in the graded runs (ncu
        # would lock them to base and every figure would drift from the GB/s).
        cmd = [ncu, "--profile-from-start", "off", "--clock-control", "none",
               "--csv", "--page", "raw",
               "--print-units", "base", "--log-file", str(log),
               "--metrics", ",".join(COUNTERS + TIME_WEIGHTED),
               str(binary), f"--profile={log2n}", f"--json={out}"]
        done = proc.run(cmd, timeout=timeout)
        report = log.read_text(errors="replace") if log.exists() else ""
        said = json.loads(out.read_text()) if out.exists() else {}
    everything = report + "\n" + done.output
    if "ERR_NVGPUCTRPERM" in everything:
        raise ProfileError(PERMISSION_HELP, EXIT_NO_PERMISSION)
    if done.code == 77 or "SKIP " in done.output and not said:
        raise ProfileError(f"no usable NVIDIA GPU here: {done.output.strip()[-300:]}",
                           EXIT_NO_GPU)
    if done.timed_out:
        return Profile(binary.name, source, ProfileStatus.ERROR, log2n,
                       detail=f"timed out after {timeout:.0f} s (an endless loop?)")
    # A word the harness never prints is no verdict: an error, like no word at all.
    status = next((s for s in ProfileStatus if s == said.get("status")), ProfileStatus.ERROR)
    kernels = parse_csv(report)
    p = Profile(said.get("name", binary.name), source, status, log2n,
                device=said.get("device", ""), detail=said.get("detail", ""), kernels=kernels)
    if status == ProfileStatus.NOT_IMPLEMENTED:
        return p
    if not kernels:
        p.status = ProfileStatus.ERROR
        p.detail = (p.detail + " " if p.detail else "") + \
            "ncu profiled no kernel: " + _last_lines(everything)
        return p
    p.counters = combine(kernels)
    p.metrics = metrics_of(p.counters, 1 << log2n, len(kernels))
    return p


def _last_lines(text: str, n: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])


# --- which programs ----------------------------------------------------------------

def previous_bench(course: labmeta.Course, lab: labmeta.Lab, contract_of: Callable[[str], str],
                   names_of: Callable[[str], list[str]], bench: str) -> str | None:
    """The bench to compare `bench` with: the nearest earlier GPU lab with a bench
    of the same contract, else the previous GPU lab's first bench."""
    gpu_labs = [x for x in course.labs if x.needs_gpu]
    earlier = gpu_labs[:gpu_labs.index(lab)] if lab in gpu_labs else []
    want = contract_of(bench)
    for x in reversed(earlier):
        for name in names_of(x.id):
            if contract_of(name) == want:
                return name
    if earlier:
        names = names_of(earlier[-1].id)
        return names[0] if names else None
    return None


def bench_names(lab: labmeta.Lab) -> list[str]:
    """bench program names of a lab, as tests/meson.build makes them."""
    suffixes = {"gpu_sum_max": ["-sum", "-max"]}.get(lab.kind, [""])
    return [lab.id + s for s in suffixes]


def contract_of(course: labmeta.Course, name: str) -> str:
    if name.endswith("-max"):
        return "max"
    if name.endswith("-sum"):
        return "sum"
    lab_id = name
    kind = next((x.kind for x in course.labs if x.id == lab_id), "")
    return {"gpu_sum": "sum", "gpu_max": "max", "gpu_float_sum": "float sum"}.get(kind, kind)


def lab_of(course: labmeta.Course, name: str) -> labmeta.Lab:
    return next(x for x in course.labs if name == x.id or name.startswith(x.id + "-"))


# --- the command -------------------------------------------------------------------

def load_reference_run(path: Path = REFERENCE_RUN) -> dict:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return data


def _reference(name: str, build_dir: Path, live: bool, committed: dict, log2n: int,
               timeout: float, progress) -> Profile | None:
    if live:
        binary = build_dir / "tests" / f"bench-{name}"
        progress(f"[profile] {name}: the reference under ncu ...")
        return profile_binary(binary, "reference", log2n, timeout)
    entry = committed.get("profiles", {}).get(name)
    if not entry:
        return None
    p = Profile.from_dict(entry)
    machine = committed.get("machine", {})
    p.source = (f"the committed run on {p.device or 'the course GPU'} (commit "
                f"{machine.get('commit', '?')[:7]}), not this GPU")
    return p


def run(lab_ids: list[str], *, build_dir: Path, arch: str | None, log2n: int, impl: str,
        json_path: Path, timeout: float, references_only: bool = False,
        progress=print) -> int:
    """`profile`: build, profile, print the table, write JSON. Returns the exit code."""
    from ..infra.gpus import visible_gpus
    course = labmeta.load()
    labs = [course.lab(x) for x in lab_ids] if lab_ids else \
        [x for x in course.labs if x.needs_gpu]
    cpu = [x.id for x in labs if not x.needs_gpu]
    if cpu:
        raise ValueError(f"{', '.join(cpu)} runs on the CPU: there is no GPU kernel to profile "
                         "(its handout shows how to time it)")
    if not visible_gpus():
        print("profile needs an NVIDIA GPU (nvidia-smi lists none here): nothing profiled")
        return EXIT_NO_GPU
    find_ncu()
    live = (toolchain.REPO / "solutions").is_dir()
    committed = {} if live else load_reference_run()
    toolchain.configure(build_dir, [f"-Dgpu_arch={arch}"] if arch else None)

    mine_prefix = "bench-" if impl == "solutions" else "labs-bench-"
    names = [name for lab in labs for name in bench_names(lab)]
    previous = {name: previous_bench(course, lab_of(course, name),
                                     lambda b: contract_of(course, b),
                                     lambda i: bench_names(course.lab(i)), name)
                for name in names}
    targets = [] if references_only else [mine_prefix + name for name in names]
    if live:
        targets += [f"bench-{x}" for x in set(names) | {p for p in previous.values() if p}]
    progress(f"[profile] building {len(targets)} program(s) ...")
    built = toolchain.build(build_dir, sorted(set(targets)))
    if not built.ok:
        print(f"build failed:\n{built.first_errors}")
        return 1
    if not live and not committed:
        print(f"note: no reference profile here ({REFERENCE_RUN.relative_to(toolchain.REPO)} is "
              "missing): only your own columns are shown")

    results: dict[str, dict[str, Profile | None]] = {}
    cache: dict[str, Profile | None] = {}
    try:
        for name in names:
            row: dict[str, Profile | None] = {}
            if not references_only:
                progress(f"[profile] {name}: your kernel under ncu ...")
                row["yours"] = profile_binary(build_dir / "tests" / (mine_prefix + name),
                                              "yours" if impl == "labs" else "solutions/",
                                              log2n, timeout)
            for key, which in (("reference", name), ("previous", previous[name])):
                if which is None:
                    continue
                if which not in cache:
                    cache[which] = _reference(which, build_dir, live, committed, log2n,
                                              timeout, progress)
                row[key] = cache[which]
            results[name] = row
    except ProfileError as e:
        print(str(e))
        return e.exit_code

    json_path.parent.mkdir(parents=True, exist_ok=True)
    if references_only:
        # The committed run's shape: one reference profile per bench, what a
        # student release reads for its reference columns.
        body = {name: asdict(ref) for name, row in results.items()
                if (ref := row.get("reference")) is not None}
    else:
        body = {name: {k: asdict(p) if p else None for k, p in row.items()}
                for name, row in results.items()}
    json_path.write_text(json.dumps({"machine": machine_info(), "log2n": log2n,
                                     "profiles": body}, indent=2) + "\n")
    for name, row in results.items():
        print()
        print(table(course, name, row, previous[name]))
    print()
    print(meanings(shown_metrics(course, results)))
    print(f"\nreport: {json_path}")
    judged = [row.get("yours" if not references_only else "reference")
              for row in results.values()]
    return 1 if any(p is None or p.status != ProfileStatus.OK for p in judged) else 0


def machine_info() -> dict:
    from ..infra.gpus import list_gpus
    gpu = next(iter(list_gpus()), None)
    done = proc.run([find_ncu(), "--version"], timeout=60)
    return {"gpu": gpu.name if gpu else "", "commit": toolchain.git_commit(),
            "ncu": done.output.strip().splitlines()[-1] if done.ok and done.output.strip()
            else ""}


def table(course: labmeta.Course, name: str, row: dict[str, Profile | None],
          previous: str | None) -> str:
    lab = lab_of(course, name)
    keys = list(COMMON) + [k for k in lab.profile if k not in COMMON]
    columns: list[tuple[str, Profile]] = []
    for key, title in (("yours", "yours"), ("reference", "reference"),
                       ("previous", f"{previous} (ref.)" if previous else "")):
        if (p := row.get(key)) is not None:
            columns.append((title, p))
    any_p = next((p for _, p in columns), None)
    head = (f"{name}: one call on 2^{any_p.log2n if any_p else '?'} elements under Nsight "
            f"Compute" + (f", {any_p.device}" if any_p and any_p.device else ""))
    lines = [head]
    for title, p in columns:
        if p.status != ProfileStatus.OK:
            why = {ProfileStatus.NOT_IMPLEMENTED: "still the skeleton (its TODO ran): nothing to profile",
                   ProfileStatus.WRONG: f"WRONG RESULT ({p.detail}): profiled all the same; fix it first "
                            "(grade it for the failing case)",
                   ProfileStatus.ERROR: f"not profiled: {p.detail}"}.get(p.status, p.status)
            lines.append(f"  {title}: {why}")
        if p.source not in ("yours", "reference", "solutions/"):
            lines.append(f"  {title}: {p.source}")
    width = max(len(METRICS[k].label) for k in keys)
    shown = [(t, p) for t, p in columns if p.metrics]
    lines.append("")
    lines.append(f"  {'':{width}}" + "".join(f"  {t:>16}" for t, _ in shown))
    for k in keys:
        m = METRICS[k]
        cells = []
        for _, p in shown:
            v = p.metrics.get(k)
            cells.append(f"  {'-' if v is None else f'{v:,.{m.digits}f}':>16}")
        lines.append(f"  {m.label:{width}}" + "".join(cells))
    return "\n".join(lines)


def shown_metrics(course: labmeta.Course, names) -> list[str]:
    keys = list(COMMON)
    for name in names:
        keys += [k for k in lab_of(course, name).profile if k not in keys]
    return keys


def meanings(keys: list[str]) -> str:
    return "what the rows mean:\n" + "\n".join(
        f"  - {METRICS[k].label}: {METRICS[k].means}" for k in keys)
