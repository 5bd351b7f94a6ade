"""The GPUs of this machine, as the grader finds them itself (nvidia-smi and
the driver's /proc files), never as a test binary reports them: which are
there, and which device node each one is (a sandbox binds only its worker's)."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import proc


@dataclass(frozen=True)
class Gpu:
    index: int  # nvidia-smi's index (not CUDA's order, which may differ)
    uuid: str  # what CUDA_VISIBLE_DEVICES is set to: stable, unambiguous
    bus_id: str
    name: str
    minor: int | None  # /dev/nvidia<minor>
    memory_mib: int = 0  # nvidia-smi's memory.total (0: not known)

    @property
    def device_node(self) -> str | None:
        return None if self.minor is None else f"/dev/nvidia{self.minor}"


def _minor(bus_id: str) -> int | None:
    """The device minor number from /proc/driver/nvidia/gpus/<bus>/information."""
    want = bus_id.lower()[-12:]  # nvidia-smi writes an 8-digit PCI domain, /proc a 4-digit one
    for info in Path("/proc/driver/nvidia/gpus").glob("*/information"):
        if info.parent.name.lower()[-12:] != want:
            continue
        m = re.search(r"Device Minor:\s*(\d+)", info.read_text(errors="replace"))
        return int(m.group(1)) if m else None
    return None


@functools.lru_cache(maxsize=1)
def list_gpus() -> tuple[Gpu, ...]:
    done = (
        proc.run(
            [
                "nvidia-smi",
                "--query-gpu=index,uuid,pci.bus_id,memory.total,name",
                "--format=csv,noheader,nounits",
            ],
            timeout=60,
        )
        if _have("nvidia-smi")
        else None
    )
    if done is None or done.code != 0:
        return ()
    gpus = []
    for line in done.output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5 or not parts[0].isdigit():
            continue
        memory = int(parts[3]) if parts[3].isdigit() else 0
        gpus.append(
            Gpu(int(parts[0]), parts[1], parts[2], ",".join(parts[4:]), _minor(parts[2]), memory)
        )
    return tuple(gpus)


# Students graded side by side on one GPU (batch --jobs-per-gpu) share it
# through a few run slots (gate.py): each checker run or compute-sanitizer tool
# holds one. Processes on one GPU do not run side by side: the GPU switches
# between their contexts, and a lab's tests are hundreds of short launches
# that each wait for their turn. Letting every worker's run onto the GPU at
# once makes each run slower, not the batch faster; past four at once more
# runs only slow each, so 4 (less memory for the same rate; see
# docs/decisions.md, "Four run slots a GPU").
GPU_RUNS_AT_ONCE = 4
# A slot must hold the 2^32-element case: its input and the checker's and
# runner's contexts, about 17 GiB, counted generously.
HUGE_CASE_GIB = 20


# Students graded at once on one GPU when nobody says: one a core the batch
# may use, since a worker keeps about one core busy (compiling, checking
# policy, starting runs) while the GPU serves the others; at most 16, the most
# measured (a 16-core H200 graded fastest with 16, its cores half busy: see
# docs/decisions.md). Run slots and kept checkers bound GPU memory separately.
MOST_STUDENTS_PER_GPU = 16


def students_per_gpu(gpu_count: int, cores: int | None = None) -> int:
    """Workers a GPU when `gpu_count` GPUs share this process's cores."""
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    return max(1, min(MOST_STUDENTS_PER_GPU, cores // max(1, gpu_count)))


def runs_at_once(gpu: Gpu, most: int = GPU_RUNS_AT_ONCE) -> int:
    """How many runs share `gpu` at once: `most`, fewer where its memory
    would not hold as many runs of the huge case."""
    if not gpu.memory_mib:
        return 1
    return max(1, min(most, gpu.memory_mib // (HUGE_CASE_GIB * 1024)))


# What one kept checker (grader/engine/sharing/checker_service.py) may hold of its
# GPU's memory while it waits for its next run: its CUDA context, counted
# generously (not measured yet: throughput.py's samples record the memory in use).
KEPT_CHECKER_GIB = 1


def kept_checkers_each(gpu: Gpu, workers: int, slots: int, reserved_gib: int = 0) -> int:
    """How many kept checkers each of `workers` may keep on `gpu`: only in the
    memory that `slots` runs of the huge case and `reserved_gib` leave, so that
    idle checkers never take a slot's room (a run alone that still ran out of
    memory would be judged as it is)."""
    spare = gpu.memory_mib - (slots * HUGE_CASE_GIB + reserved_gib) * 1024
    return max(0, spare // (max(1, workers) * KEPT_CHECKER_GIB * 1024))


def _have(tool: str) -> bool:
    import shutil

    return shutil.which(tool) is not None


def find(selector: str) -> Gpu:
    """A GPU by nvidia-smi index or UUID (the values --gpus takes)."""
    for g in list_gpus():
        if selector in (str(g.index), g.uuid):
            return g
    known = ", ".join(f"{g.index} ({g.uuid})" for g in list_gpus()) or "none"
    raise ValueError(f"no GPU {selector!r} on this machine; there are: {known}")


def visible() -> list[Gpu]:
    """The GPUs this process may use: every GPU of the machine, or those
    CUDA_VISIBLE_DEVICES lists when it is set (Slurm sets it to the GPUs a job
    was given; another user's GPU is not ours to grade on)."""
    return _allowed(list_gpus(), os.environ.get("CUDA_VISIBLE_DEVICES"))


def visible_gpus() -> list[str]:
    """The UUIDs of visible(), as CUDA_VISIBLE_DEVICES names them."""
    return [g.uuid for g in visible()]


def visible_note() -> str | None:
    """Which of the machine's GPUs CUDA_VISIBLE_DEVICES leaves, when it is set:
    an index there is nvidia-smi's (visible), which CUDA's own order need not be."""
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is None:
        return None
    taken = ", ".join(str(g.index) for g in visible()) or "none"
    return (
        f"CUDA_VISIBLE_DEVICES={hidden}: grading on GPU {taken} of the machine's {len(list_gpus())}"
    )


def _allowed(found: tuple[Gpu, ...], setting: str | None) -> list[Gpu]:
    """The GPUs of `found` that CUDA_VISIBLE_DEVICES=`setting` leaves visible,
    read as CUDA reads it: indices or UUIDs (or a UUID's unambiguous start),
    in the order given; the list ends at the first entry that names no GPU, and
    an empty setting hides them all. An index is nvidia-smi's, which is CUDA's
    only with CUDA_DEVICE_ORDER=PCI_BUS_ID: on a machine of unlike GPUs name
    them by UUID."""
    if setting is None:
        return list(found)
    chosen: list[Gpu] = []
    for entry in (e.strip() for e in setting.split(",")):
        if entry.isdigit():
            match = [g for g in found if g.index == int(entry)]
        elif entry.startswith(("GPU-", "MIG-")) or entry[:1].isalnum():
            want = entry if entry.startswith(("GPU-", "MIG-")) else "GPU-" + entry
            match = [g for g in found if g.uuid.startswith(want)]
        else:
            match = []
        if len(match) != 1 or match[0] in chosen:
            break
        chosen.append(match[0])
    return chosen
