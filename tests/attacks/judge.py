"""What each attack of attacks.toml must get, checked against a batch's
results: used by grader/tests/test_attacks.py (CI, lab 01) and run_attacks.py
(a GPU lab on a GPU machine)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path


def judge(attack: dict, result, out: Path, policy: bool, reached: int | None = None) -> list[str]:
    """Problems with one attack's graded result (empty: graded as it should be).
    reached: how often the batch's lab code reached listener.Listener."""
    name = attack["name"]
    if not result.labs:
        # Not graded at all (the submission or the batch failed before its
        # lab): nothing to judge, and the run must say so rather than stop.
        return [f"{name}: not graded: {result.error or 'no lab in the result'}"]
    lab = result.labs[0]
    if "unreached" in attack.get("check", []) and reached != 0:
        # Whatever the grade, the lab's code must not have got through.
        why = "no listener was given" if reached is None else f"reached it {reached} time(s)"
        return [f"{name}: the lab's code must not reach the grading machine's network: {why}"]
    if policy and attack["policy"] == "yes":
        return (
            []
            if lab.status == "policy" and lab.points == 0
            else [f"{name}: expected a policy violation, got {lab.status} {lab.points:g}"]
        )
    if policy and attack["policy"] == "if_builds":
        return (
            []
            if lab.status in ("policy", "build_failed") and lab.points == 0
            else [f"{name}: expected a policy violation or no build, got {lab.status}"]
        )
    if attack["policy"] == "if_builds" and lab.status == "build_failed" and lab.points == 0:
        return []  # this compiler does not declare it: nothing to grade
    problems = []
    if attack["expect"] == "zero" and lab.points != 0:
        problems.append(f"{name}: expected 0 points, got {lab.points:g} ({lab.status})")
    if attack["expect"] == "correct" and not (
        lab.status == "graded" and lab.points_correctness == lab.max_correctness
    ):
        why = lab.first_failure.describe() if lab.first_failure else lab.reason
        problems.append(
            f"{name}: expected every correctness point, got "
            f"{lab.points_correctness:g} ({lab.status}: {why})"
        )
    for check in attack.get("check", []):
        if check == "note":
            notes = " ".join(lab.notes + result.notes + [lab.reason])
            if attack["note"] not in notes:
                problems.append(f"{name}: no note about {attack['note']!r}: {notes[:300]}")
        elif check == "no_performance":
            # A lab is as fast as its slowest variant: one slow variant, no points.
            if lab.points_performance != 0:
                problems.append(
                    f"{name}: expected no performance points, got "
                    f"{lab.points_performance:g} (fraction {lab.fraction})"
                )
        elif check == "faults_bounded":
            # Each lost context costs a new runner; after the budget
            # (runner_link.hpp's max_crashes) the rest must not run.
            if not any("did not run" in h for h in lab.hints):
                problems.append(f"{name}: every test ran; hints: {lab.hints[:3]}")
        elif check == "ceiling_unmoved":
            # The batch measured each GPU's ceiling before any student ran; the
            # lab must carry the one of the GPU its result names (two GPUs'
            # ceilings differ: docs/decisions.md, "The attack judge takes a
            # ceiling from any GPU of the batch"), or of any GPU of the batch
            # where it names none.
            side = "gpu" if not lab.lab.startswith("01_") else "cpu"
            workers = json.loads((out / "batch.json").read_text())["workers"]
            own = [w for w in workers if w["gpu"] and w["gpu"] == result.gpu]
            befores = [w["ceilings"][side]["before"] for w in own or workers]
            if lab.ceiling_gbps is None or not any(
                abs(lab.ceiling_gbps - b) <= 1e-3 * b for b in befores
            ):
                problems.append(
                    f"{name}: ceiling {lab.ceiling_gbps} is none of the batch's {befores}"
                )
    return problems


def judge_files(out: Path) -> list[str]:
    """Every gradebook row carries the digest of the result.json beside it."""
    problems = []
    with open(out / "gradebook.csv", newline="") as f:
        rows = list(csv.reader(f))[1:]  # a quoted field may hold a comma or a line break
    for row in rows:
        student, digest = row[0], row[-1]
        text = (out / "students" / student / "result.json").read_bytes()
        if hashlib.sha256(text).hexdigest()[:16] != digest:
            problems.append(f"{student}: result.json does not match its gradebook row")
    return problems
