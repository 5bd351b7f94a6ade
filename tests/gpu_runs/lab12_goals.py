#!/usr/bin/env python3
"""Lab 12's goals, read from one run of its bench (bench-12_multi_gpu_allreduce
--json): its limit is the kernel-made copy between the GPUs (a kernel that only
moves the same bytes), so the reference must reach at least 0.97 of it at every
size from 2^26 to 2^30, where the link sets the time; and it must be at least
1.10 times NCCL's all-reduce, measured in the same process, from 2^16 to 2^28.
Prints the three side by side and one verdict per goal; exit 1 when one fails.

usage: lab12_goals.py BENCH_JSON"""

from __future__ import annotations

import json
import sys

OF_COPY, COPY_SIZES = 0.97, range(26, 31)
OVER_NCCL, NCCL_SIZES = 1.10, range(16, 29)


def algbw(size: dict, method: str) -> float:
    return size["methods"].get(method, {}).get("algbw_gbps", 0.0)


def main(path: str) -> int:
    run = json.load(open(path))
    print(f"{run['gpus']} x {run['device']}, NCCL {run['nccl_version']}, commit {run['commit']}")
    print("| size | reference | kernel copy | ref/copy | NCCL | ref/NCCL |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    missed = {"copy": [], "nccl": []}
    seen = {"copy": set(), "nccl": set()}
    for s in run["sizes"]:
        k = s["log2n"]
        if s["status"] != "ok":
            print(f"| 2^{k} | {s['status']} {s['detail']} | | | | |")
            continue
        ref = algbw(s, "ref")
        kc = max(algbw(s, "copy_all_stores"), algbw(s, "copy_all_loads"))
        nccl = algbw(s, "nccl")
        of_copy, over = (ref / kc if kc else 0.0), (ref / nccl if nccl else 0.0)
        print(f"| 2^{k} | {ref:.1f} | {kc:.1f} | {of_copy:.3f} | {nccl:.1f} | {over:.3f} |")
        if k in COPY_SIZES and kc:  # a run without the kernel copies has no limit to read
            seen["copy"].add(k)
            if of_copy < OF_COPY:
                missed["copy"].append(f"2^{k}: {of_copy:.3f}")
        if k in NCCL_SIZES and nccl:
            seen["nccl"].add(k)
            if over < OVER_NCCL:
                missed["nccl"].append(f"2^{k}: {over:.3f}")
    ok = True
    for goal, want, sizes, text in (
        ("copy", OF_COPY, COPY_SIZES, "of the kernel copy"),
        ("nccl", OVER_NCCL, NCCL_SIZES, "times NCCL"),
    ):
        absent = [f"2^{k} not measured" for k in sizes if k not in seen[goal]]
        good = not missed[goal] and not absent
        ok &= good
        print(
            f"goal: at least {want} {text} from 2^{sizes[0]} to 2^{sizes[-1]}: "
            + ("met" if good else f"NOT met ({', '.join(missed[goal] + absent)})")
        )
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
