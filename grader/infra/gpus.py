"""The GPUs of this machine, as the grader finds them itself (nvidia-smi and
the driver's /proc files), never as a test binary reports them: which are
there, and which device node each one is (a sandbox binds only its worker's)."""

from __future__ import annotations

import functools
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


# Students graded side by side on one GPU (batch --jobs-per-gpu): each run of
# the 2^32-element case may hold 18 GiB; every other run of a worker (the rest
# of its tests, a sanitizer tool: a checker and a runner, a CUDA context each)
# a few hundred MiB, counted generously.
HUGE_CASE_GIB = 20
OTHER_RUN_GIB = 2


def most_jobs(gpu: Gpu, workers: int = 1) -> int:
    """How many runs of the huge case fit this GPU's memory at once, beside
    one other run of each of `workers` workers."""
    if not gpu.memory_mib:
        return 1
    left = gpu.memory_mib - workers * OTHER_RUN_GIB * 1024
    return max(1, left // (HUGE_CASE_GIB * 1024))


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


def visible_gpus() -> list[str]:
    """The UUIDs of this machine's GPUs, as CUDA_VISIBLE_DEVICES names them."""
    return [g.uuid for g in list_gpus()]
