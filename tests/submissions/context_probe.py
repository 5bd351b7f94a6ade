#!/usr/bin/env python3
"""What a CUDA process's start costs when K start together: K bare processes
(no harness, no lab), each creating its CUDA context (cudaFree(0)) and then
making, mapping, filling and freeing N shared allocations the way the
harness's tests/support/vmm.cu makes every case's buffers (cuMemCreate with a
POSIX file descriptor, export, reserve, map, set access). Each reports both
times; the study also records each process's wall time, its exit included
(the context's teardown).

Why: gpu_spread_study.py found about 0.4 s of every test run's start served
one run at a time across the machine, whatever the GPU (docs/decisions.md,
"A batch's rate is bound by the host, not its GPUs"). If K bare contexts also
take K times as long, the driver serialises context creation, and the lever is
fewer processes per lab; if the allocations scale instead, it is fewer
allocations per case.

usage: context_probe.py OUT [--arch sm_90] [--ks 1,4,8,16] [--allocations 0,64] [--rounds 2]
                        [--envs ';NAME=VALUE,...'] [--round-trips N] [--spread]
--spread: each K also with its processes dealt in turn over every visible GPU
(is what serialises the starts the machine's or each GPU's?).
Writes OUT/context-probe.json after every row and prints each row."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from grader.infra import gpus  # noqa: E402

PROBE = r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CU(call)                                                              \
  do {                                                                        \
    CUresult r_ = (call);                                                     \
    if (r_ != CUDA_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s failed: CUresult %d\n", #call, int(r_));       \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

__global__ void touch(int* p) { *p += 1; }

static double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int main(int argc, char** argv) {
  const int allocations = argc > 1 ? std::atoi(argv[1]) : 0;
  const int round_trips = argc > 2 ? std::atoi(argv[2]) : 0;
  const long long start_at_ms = argc > 3 ? std::atoll(argv[3]) : 0;  // the K processes' common start
  auto started = std::chrono::steady_clock::now();
  cudaError_t e = cudaFree(nullptr);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cudaFree(0) failed: %s\n", cudaGetErrorString(e));
    return 1;
  }
  const double context_ms = ms_since(started);
  started = std::chrono::steady_clock::now();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::size_t granule = 0;
  CU(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const std::size_t bytes = ((std::size_t{4} << 20) + granule - 1) / granule * granule;
  for (int i = 0; i < allocations; ++i) {
    CUmemGenericAllocationHandle handle = 0;
    CU(cuMemCreate(&handle, bytes, &prop, 0));
    int fd = -1;
    CU(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CUdeviceptr va = 0;
    CU(cuMemAddressReserve(&va, bytes, 0, 0, 0));
    CU(cuMemMap(va, bytes, 0, handle, 0));
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(va, bytes, &access, 1));
    CU(cuMemsetD8(va, 0xA5, bytes));
    CU(cuCtxSynchronize());
    CU(cuMemUnmap(va, bytes));
    CU(cuMemAddressFree(va, bytes));
    CU(cuMemRelease(handle));
    close(fd);
  }
  const double allocations_ms = ms_since(started);
  // Round trips: a one-thread kernel and a 4-byte read back, as a case reads
  // each call's result, after every process's context is up.
  int* counter = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&counter, sizeof(int)) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess)
    return 1;
  while (std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() < start_at_ms)
    usleep(1000);
  started = std::chrono::steady_clock::now();
  int host = 0;
  for (int i = 0; i < round_trips; ++i) {
    touch<<<1, 1, 0, stream>>>(counter);
    cudaMemcpyAsync(&host, counter, sizeof host, cudaMemcpyDeviceToHost, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;
  }
  const double round_trips_ms = ms_since(started);
  if (host != round_trips) return 1;
  std::printf("{\"context_ms\": %.1f, \"allocations_ms\": %.1f, \"round_trips_ms\": %.1f}\n",
              context_ms, allocations_ms, round_trips_ms);
  return 0;
}
"""


ENVS_HELP = (
    "NAME=VALUE,...;...: environments to compare, each a row of its own "
    "(empty: the inherited one), e.g. ';CUDA_DEVICE_MAX_CONNECTIONS=1'"
)


def environments(spec: str) -> list[dict[str, str]]:
    """--envs: the environments to compare, the variables each adds."""
    return [dict(kv.split("=", 1) for kv in one.split(",") if kv) for one in spec.split(";")]


def env_name(variables: dict[str, str]) -> str:
    return ",".join(f"{n}={v}" for n, v in variables.items()) or "inherited"


def build(arch: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="context-probe-"))
    (folder / "probe.cu").write_text(PROBE)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    arch_flags = [] if arch == "auto" else [f"-arch={arch}"]
    subprocess.run(
        [nvcc, *arch_flags, "-O2", "-o", str(folder / "probe"), str(folder / "probe.cu"), "-lcuda"],
        check=True,
    )
    return folder / "probe"


def together(
    probe: Path,
    k: int,
    allocations: int,
    on: list[str],
    variables: dict[str, str],
    round_trips: int = 0,
) -> list[dict]:
    """K probes started together, the i-th on GPU on[i % len(on)]."""
    started = time.monotonic()
    # The round trips start together, once every context is up (k * 0.3 s is ample).
    start_at_ms = int((time.time() + 1 + 0.3 * k) * 1000) if round_trips else 0
    argv = [str(probe), str(allocations), str(round_trips), str(start_at_ms)]
    procs = [
        subprocess.Popen(
            argv,
            env=dict(os.environ, CUDA_VISIBLE_DEVICES=on[i % len(on)], **variables),
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(k)
    ]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        # Exits are collected in start order, so a process's wall time is an
        # upper bound: it may have ended while an earlier one was waited for.
        wall = time.monotonic() - started
        row = {"exit": p.returncode, "wall_ms_at_most": round(wall * 1000, 1)}
        if p.returncode == 0:
            row.update(json.loads(out.strip().splitlines()[-1]))
        results.append(row)
    return results


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--ks", default="1,4,8,16")
    ap.add_argument("--allocations", default="0,64")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--envs", default="", help=ENVS_HELP)
    ap.add_argument(
        "--round-trips",
        type=int,
        default=0,
        help="N: then each process makes N GPU round trips (a tiny kernel, a 4-byte read back), "
        "all K started together: does the GPU serve other contexts' round trips one at a time?",
    )
    ap.add_argument(
        "--spread",
        action="store_true",
        help="each K also dealt over every visible GPU in turn: the machine's serial part or each GPU's?",
    )
    args = ap.parse_args()
    ids = gpus.visible_gpus()
    if not ids:
        print("no GPU visible: this probe needs one", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    probe = build(args.arch)
    rows: list[dict] = []
    print(
        f"{'environment':<34}{'allocs':>6}{'k':>4}{'context ms (median, max)':>27}"
        f"{'allocs ms (median)':>20}{'trips ms (median)':>19}  all ok"
    )
    spreads = [ids[:1], ids] if args.spread and len(ids) > 1 else [ids[:1]]
    plan = itertools.product(
        environments(args.envs),
        map(int, args.allocations.split(",")),
        map(int, args.ks.split(",")),
        spreads,
    )
    for variables, allocations, k, on in plan:
        named = env_name(variables) + (f" over {len(on)} GPUs" if len(on) > 1 else "")
        for round_ in range(args.rounds):
            each = together(probe, k, allocations, on, variables, args.round_trips)
            ok = [r for r in each if r["exit"] == 0]
            context = [r["context_ms"] for r in ok] or [float("nan")]
            allocs = [r["allocations_ms"] for r in ok] or [float("nan")]
            trips = [r["round_trips_ms"] for r in ok] or [float("nan")]
            row = {
                "environment": variables,
                "allocations": allocations,
                "k": k,
                "gpus": len(on),
                "round": round_ + 1,
                "context_ms_median": statistics.median(context),
                "context_ms_max": max(context),
                "allocations_ms_median": statistics.median(allocs),
                "round_trips": args.round_trips,
                "round_trips_ms_median": statistics.median(trips),
                "all_ok": len(ok) == k,
                "each": each,
            }
            rows.append(row)
            (args.out / "context-probe.json").write_text(
                json.dumps({"gpus": ids, "rows": rows}, indent=2) + "\n"
            )
            print(
                f"{named:<34}{allocations:>6}{k:>4}{row['context_ms_median']:>14.1f}"
                f"{row['context_ms_max']:>13.1f}{row['allocations_ms_median']:>20.1f}"
                f"{row['round_trips_ms_median']:>19.1f}"
                f"  {row['all_ok']}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
