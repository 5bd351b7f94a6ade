"""`calibrate`: thresholds for this GPU from the reference solutions.

Runs every lab's bandwidth test against its reference solution, several
times, and proposes threshold = margin x the lowest fraction of the copy
ceiling measured (default margin 0.85), floor = threshold / 2. With --write
the thresholds go into grader/labs.toml, for the instructor to commit as the
course GPU's."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import isolation, labmeta, tools
from .checker_run import run_checker
from .scoring import bandwidth_figures, is_performance


@dataclass
class Calibration:
    lab: str
    fractions: list[float]
    threshold: float
    floor: float
    old_threshold: float


def measure(build_dir: Path, repeats: int = 3, margin: float = 0.85,
            progress=print) -> list[Calibration]:
    course = labmeta.load()
    out = []
    for lab in course.labs:
        runner = f"{lab.id}-runner-solutions"
        checker = f"checker-{lab.kind}"
        if not tools.build(build_dir, [runner, checker]).ok:
            raise tools.SetupError(f"{lab.id}: the reference solution does not build")
        fractions = []
        for _ in range(repeats):
            # Measured through the same checker and runner path as a student's code.
            iso = isolation.contained()
            try:
                run = run_checker(build_dir / "tests" / checker, lab.id,
                                  iso.runner(build_dir / "tests" / runner), impl="solutions",
                                  gtest_filter="*Bandwidth*", timeout=600)
            finally:
                iso.cleanup()
            if run.status == "skipped":
                progress(f"[calibrate] {lab.id}: skipped ({run.reason})")
                break
            # A lab with two bandwidth tests (sum and max) is as fast as its slowest.
            per_run = [f["fraction"] for c in run.cases if is_performance(c)
                       for f in bandwidth_figures(c) if f["graded"] and f["fraction"]]
            if per_run:
                fractions.append(min(per_run))
        if fractions:
            threshold = round(margin * min(fractions), 3)
            out.append(Calibration(lab.id, fractions, threshold, round(threshold / 2, 3),
                                   lab.threshold))
            progress(f"[calibrate] {lab.id}: fractions {', '.join(f'{f:.3f}' for f in fractions)}"
                     f" -> threshold {threshold} (was {lab.threshold})")
    return out


def write(calibrations: list[Calibration], gpu: str, path: Path = labmeta.LABS_TOML) -> None:
    text = path.read_text()
    for c in calibrations:
        section = re.search(rf"^\[labs\.{re.escape(c.lab)}\]$.*?(?=^\[|\Z)", text, re.M | re.S)
        if section is None:
            continue
        body = re.sub(r"^threshold = .*$", f"threshold = {c.threshold}", section.group(0), flags=re.M)
        body = re.sub(r"^floor = .*$", f"floor = {c.floor}", body, flags=re.M)
        text = text[:section.start()] + body + text[section.end():]
    text = re.sub(r'^gpu = ".*?"', f'gpu = "{gpu}"', text, count=1, flags=re.M)
    path.write_text(text)
    labmeta.load(path)  # still valid


def run(build_dir: Path, arch: str, repeats: int, margin: float, do_write: bool) -> int:
    from .batch import visible_gpus
    from .gpucheck import machine
    if not visible_gpus():
        print("calibrate needs the course GPU (nvidia-smi lists none here): nothing measured")
        return 4
    tools.configure(build_dir, [f"-Dgpu_arch={arch}"])
    cals = measure(build_dir, repeats, margin)
    gpu = (machine()["nvidia_smi"] or ["unknown GPU"])[0].split(",")[0]
    print(f"\n{'lab':28} {'measured (min)':>14} {'threshold':>9} {'floor':>6} {'was':>6}")
    for c in cals:
        print(f"{c.lab:28} {min(c.fractions):>14.3f} {c.threshold:>9} {c.floor:>6} "
              f"{c.old_threshold:>6}")
    if do_write:
        write(cals, gpu)
        print(f"\nwrote {labmeta.LABS_TOML} for {gpu}: review and commit it")
    else:
        print("\n(not written: add --write to update grader/labs.toml)")
    return 0
