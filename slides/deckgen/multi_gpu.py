"""Lab 12's results block: its figures come from a machine with two GPUs or more
(tests/gpu_runs/lab12_gpu.sh), not from gpucheck's one-GPU run, so they are read
from the committed bench file of that machine."""

from __future__ import annotations

import json
from pathlib import Path

from . import REPO
from .view import rel

# The committed run the deck shows (two H100s; the H200 pair's runs answered
# by H100s since): the kernels as they are, through the trusted checker's era.
LAB12_RUN = REPO / "tests" / "gpu_runs" / "h100x2" / "lab12-bench-64a5ad6.json"
SHOWN_SIZES = (16, 18, 19, 20, 22, 24, 26, 28, 30)
REPRODUCE = ["```", "OUT=DIR bash tests/gpu_runs/lab12_gpu.sh", "```"]
# A run with the bench's copies made by kernels (2b98a4c on): the bound of any
# all-reduce of loads and stores, and how near the reference comes to it.
KERNEL_COPY_RUN = REPO / "tests" / "gpu_runs" / "h100x2" / "lab12-kernel-copy-2b98a4c.json"
KERNEL_COPY_SIZES = (24, 26, 28, 29, 30)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table, the first column left-aligned and the figures right."""
    return [
        "| " + " | ".join(header) + " |",
        "| --- |" + " ---: |" * (len(header) - 1),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _algbw(data: dict, shown: tuple[int, ...], methods: tuple[str, ...]):
    """(log2n, algbw of each method) for every shown size that has them all."""
    for size in data["sizes"]:
        m = size["methods"]
        if size["log2n"] in shown and all(k in m for k in methods):
            yield size["log2n"], [m[k]["algbw_gbps"] for k in methods]


def kernel_copy_block(run: Path = KERNEL_COPY_RUN) -> list[str]:
    """The slide that compares the reference with a kernel that only copies."""
    if not run.is_file():
        return []
    data = json.loads(run.read_text())
    rows = [
        [f"$2^{{{log2n}}}$", f"{ref:.1f}", f"{copy:.1f}", f"{ref / copy:.3f}", f"{nccl:.1f}"]
        for log2n, (ref, copy, nccl) in _algbw(
            data, KERNEL_COPY_SIZES, ("ref", "copy_all_stores", "nccl")
        )
    ]
    header = ["floats per GPU", "reference GB/s", "kernel store copy GB/s", "reference / copy"]
    return [
        "## What bounds it: a kernel that only copies",
        "",
        *_table([*header, "NCCL GB/s"], rows),
        "",
        "Every GPU's kernel stores its buffer into the other's, nothing added "
        "(`copy_all_stores`): no all-reduce of loads and stores can beat it, and the "
        f"reference runs at its speed (`{rel(run)}`). TMA bulk copies gained 1%, the copy "
        "engines move 8% more.",
        "",
    ]


def lab12_block(run: Path = LAB12_RUN) -> list[str]:
    if not run.is_file():
        return [
            "## Measured",
            "",
            "Lab 12 needs two GPUs or more, and `gpucheck` does not run it: its figures "
            "(the reference beside NCCL and the peer copy) come from, on a machine with two "
            "GPUs joined by NVLink:",
            "",
            *REPRODUCE,
        ]
    data = json.loads(run.read_text())
    rows = [
        [
            f"$2^{{{log2n}}}$",
            f"{ref:.1f}",
            f"{nccl:.1f}",
            f"{ref / nccl:.2f}x",
            f"{copy:.1f}",
            f"{ref / copy:.3f}",
        ]
        for log2n, (ref, nccl, copy) in _algbw(data, SHOWN_SIZES, ("ref", "nccl", "copy_one"))
    ]
    header = ["floats per GPU", "reference GB/s", "NCCL GB/s", "reference / NCCL"]
    return [
        f"## Measured on {data['gpus']} x {data['device']}",
        "",
        *_table([*header, "peer copy GB/s", "reference / copy"], rows),
        "",
        f"algbw: one GPU's buffer over the time of a call; one process, best median of "
        f"{data['rounds']} rounds (`{rel(run)}`).",
        "",
        *kernel_copy_block(),
        "## Measure it yourself",
        "",
        "On a machine with two GPUs joined by NVLink:",
        "",
        *REPRODUCE,
    ]
