#!/usr/bin/env python3
"""The cost of a similarity run over a synthetic class on one CPU core:
N students x 11 labs, each lab of each student a disguised copy (disguise.py,
a random disguise and seed) of that lab's reference or of an honest
student's. Nearly every pair is alike, so the index lets every pair
through: the worst case, not a typical class. Writes scale.json here.

usage: taskset -c 0 env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
           python3 tests/similarity/scale.py [N ...]      (default: 100 300)"""

from __future__ import annotations

import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(HERE)]
import disguise  # noqa: E402
import make_copies  # noqa: E402
from grader import labmeta  # noqa: E402
from grader.similarity import analyse  # noqa: E402


def synthetic_class(dest: Path, n: int, course: labmeta.Course) -> dict[str, str]:
    rng = random.Random(n)
    reference = make_copies.reference_bodies(course)
    honest = make_copies.honest_bodies()
    specs = {}
    for k in range(n):
        labs = {}
        for lab in course.labs:
            sources = [reference[lab.id]] + [h[lab.id] for h in honest.values() if lab.id in h]
            bodies = rng.choice(sources)
            how = rng.choice(make_copies.HOW)
            labs[lab.id] = {
                f: disguise.disguise(b, how, rng.randrange(1 << 30))[0] for f, b in bodies.items()
            }
        make_copies.write_student(dest, f"s{k:03d}", labs, course)
        specs[str(dest / f"s{k:03d}")] = f"s{k:03d}"
    return specs


def measure(n: int) -> dict:
    course = labmeta.load()
    with tempfile.TemporaryDirectory(prefix="similarity-scale-") as tmp:
        specs = synthetic_class(Path(tmp), n, course)
        start = time.process_time()
        result = analyse.analyse(specs, course)
        cpu = time.process_time() - start
    runs = result.runs.values()
    return {
        "students": n,
        "labs": len(course.labs),
        "wall_s": round(result.seconds, 1),
        "cpu_s": round(cpu, 1),
        "pairs_all_against_all": sum(r.pairs for r in runs),
        "pairs_compared_in_full": sum(r.compared for r in runs),
        "pairs_flagged": sum(m.flagged for r in runs for m in r.matches),
    }


def pair_cost(course: labmeta.Course, pairs: int = 1000) -> float:
    """Microseconds of CPU per pair compared in full (copydetect's
    compare_files), over distinct disguised copies of lab 07's reference:
    what a class whose every pair is alike, and alike to no known source,
    would pay for each of its n(n-1)/2 pairs."""
    from copydetect import compare_files

    from grader.similarity import compare, documents

    lab = course.lab("07")
    skeleton = (REPO / "labs" / lab.id / lab.files[0]).read_text()
    bodies = make_copies.reference_bodies(course)[lab.id]
    hashes = compare.boilerplate_hashes(documents.boilerplate_texts(course)[lab.id])
    fps = []
    for k, how in enumerate(["rename", "reformat", "reorder", "all"] * 25):
        text = make_copies.fill(
            skeleton, {f: disguise.disguise(b, how, k)[0] for f, b in bodies.items()}
        )
        fps.append(
            compare.fingerprint(
                documents.lab_document(f"s{k}", "student", lab, {lab.files[0]: text})[0], hashes
            )
        )
    start = time.process_time()
    for k in range(pairs):
        compare_files(fps[k % len(fps)], fps[(7 * k + 1) % len(fps)])
    return (time.process_time() - start) / pairs * 1e6


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [100, 300]
    rows = []
    for n in sizes:
        rows.append(measure(n))
        print(rows[-1], flush=True)
    report = {
        "command": "taskset -c 0 env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
        f"python3 tests/similarity/scale.py {' '.join(map(str, sizes))}",
        "cpu": platform.processor() or platform.machine(),
        "cores_allowed": len(os.sched_getaffinity(0)),
        "compare_files_us_per_pair": round(pair_cost(labmeta.load()), 1),
        "rows": rows,
    }
    worst = rows[-1]["pairs_all_against_all"] * report["compare_files_us_per_pair"] / 1e6
    report["every_pair_in_full_s"] = round(worst + rows[-1]["cpu_s"], 1)
    (HERE / "scale.json").write_text(json.dumps(report, indent=1) + "\n")
