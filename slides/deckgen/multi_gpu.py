"""Lab 12's results block: its figures come from a machine with two GPUs or more
(tests/gpu_runs/lab12_gpu.sh), not from gpucheck's one-GPU run, so they are read
from the committed bench file of that machine.

The lab's limit is what a kernel's own stores carry over the link, so the block
sets the reference beside a kernel that only copies (`copy_all_stores`) and
beside NCCL, all three from one process, with the copy engines' peer copy
(`copy_one`, which the grade divides by) for scale."""

from __future__ import annotations

import json
from pathlib import Path

from . import REPO
from .view import rel

# The committed run the deck shows: the one bench file with the kernels' own
# copies beside the reference and NCCL at every size (two H100s joined by NVLink).
LAB12_RUN = REPO / "tests" / "gpu_runs" / "h100x2" / "lab12-bench-87b7298.json"
SHOWN_SIZES = (16, 18, 19, 20, 22, 24, 26, 28, 29, 30)
METHODS = ("ref", "copy_all_stores", "nccl", "copy_one")
REPRODUCE = ["```", "OUT=DIR bash tests/gpu_runs/lab12_gpu.sh", "```"]


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


def _row(log2n: int, ref: float, kernel_copy: float, nccl: float, peer: float) -> list[str]:
    return [
        f"$2^{{{log2n}}}$",
        f"{ref:.1f}",
        f"{kernel_copy:.1f}",
        f"{nccl:.1f}",
        f"{peer:.1f}",
        f"{ref / kernel_copy:.3f}",
        f"{ref / nccl:.2f}x",
    ]


HEADER = [
    "floats per GPU",
    "reference",
    "kernel copy",
    "NCCL",
    "copy engine",
    "ref / kernel copy",
    "ref / NCCL",
]


def lab12_block(run: Path = LAB12_RUN) -> list[str]:
    if not run.is_file():
        return [
            "## Measured",
            "",
            "Lab 12 needs two GPUs or more, and `gpucheck` does not run it: its figures "
            "(the reference beside a kernel's copy, NCCL and the peer copy) come from, on a "
            "machine with two GPUs joined by NVLink:",
            "",
            *REPRODUCE,
        ]
    data = json.loads(run.read_text())
    rows = [_row(log2n, *bw) for log2n, bw in _algbw(data, SHOWN_SIZES, METHODS)]
    return [
        f"## Measured on {data['gpus']} x {data['device']}",
        "",
        *_table(HEADER, rows),
        "",
        "algbw in GB/s: one GPU's buffer over the time of a call; one process, best median of "
        f"{data['rounds']} rounds (`{rel(run)}`). Kernel copy: every GPU's kernel stores its "
        "buffer into the other's, nothing added (`copy_all_stores`), the most an all-reduce "
        "of loads and stores can move; copy engine: GPU 0 pulls GPU 1's buffer by the copy "
        "engines (`copy_one`), what the grade divides by.",
        "",
        "## Measure it yourself",
        "",
        "On a machine with two GPUs joined by NVLink:",
        "",
        *REPRODUCE,
    ]
