"""A lab's policy findings as the grade states them, and the linked check of
its files against the skeleton and the reference (policy.check_linked), as
grade_lab runs it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ... import labmeta
from ...results import LabResult
from ...status import LabStatus
from ...infra import toolchain
from . import build_flags, facts_cache, policy


def violation_text(v: policy.Violation) -> str:
    found = f" ({v.found})" if v.found else ""
    return f"{v.file}:{v.line}{found}: {v.why}"


def linked_violations(
    lab: labmeta.Lab,
    lab_dir: Path,
    repo: Path,
    policy_work: Path,
    build_dir: Path,
    target: str,
) -> list[policy.Violation]:
    """The linked policy check of each of the lab's files against the skeleton
    and the reference, each compiled as build_dir's target compiles the file
    (build_flags.py says why); a file that built but could not be checked
    fails closed (the batch's preflight checks the reference the same way first)."""
    return _each_file(
        policy.check_linked,
        "the policy check could not compile or read this file the way it must: ",
        lab,
        lab_dir,
        repo,
        policy_work,
        build_dir,
        target,
    )


def reads_build(lab: labmeta.Lab, build_dir: Path, target: str) -> bool:
    """Whether the linked check reads what the build makes instead of
    compiling (build_flags.kept_by_build): it must then start after the build."""
    likes = [build_flags.for_file(build_dir, target, name) for name in lab.files]
    return any(like is not None and like.kept is not None for like in likes)


def built_violations(
    lab: labmeta.Lab,
    lab_dir: Path,
    repo: Path,
    policy_work: Path,
    build_dir: Path,
    target: str,
    linked: list[policy.Violation],
) -> list[policy.Violation]:
    """policy.check_built of each of the lab's files once the build has
    compiled them: the build's own objects, what runs. A file whose object
    cannot be read fails closed. What `linked` (linked_violations's findings)
    already names in a file is left out: the build's object has no line
    tables, so the same call would show twice, once without its line."""
    found = _each_file(
        policy.check_built,
        "the policy check could not read what the build made of this file: ",
        lab,
        lab_dir,
        repo,
        policy_work,
        build_dir,
        target,
    )
    return not_named(found, linked)


def not_named(
    built: list[policy.Violation], linked: list[policy.Violation]
) -> list[policy.Violation]:
    """built_violations's findings that `linked` does not name already."""
    named = {(v.file, v.found) for v in linked}
    return [v for v in built if (v.file, v.found) not in named]


def _instructors(
    lab: labmeta.Lab, repo: Path, policy_work: Path, build_dir: Path, target: str
) -> Iterator[tuple[str, build_flags.BuildCompile | None, dict[str, Any]]]:
    """Each of the lab's files that has a reference (a student's own copy has
    none: the instructor's batch checks it): its name, the build's compile of
    it (None where the build has none), and the options every check of it
    takes besides that compile (the instructor's files, the facts cache)."""
    for name in lab.files:
        reference = reference_file(repo, lab, name)
        if reference is None:
            continue
        shared = {
            "skeleton_file": toolchain.REPO / "labs" / lab.id / name,
            "reference_file": reference,
            "include_dirs": [repo / "common"],
            "work": policy_work,
        }
        yield name, build_flags.for_file(build_dir, target, name), shared


def baseline_compiles(
    lab: labmeta.Lab, repo: Path, policy_work: Path, build_dir: Path, target: str
) -> list[Callable[[], object]]:
    """The compiles of the skeleton and the reference that the lab's checks
    read from the facts cache (facts_cache.cached_facts), one call each, to run
    at once before the checks need them (Worker.preflight)."""
    calls: list[Callable[[], object]] = []
    categories = policy.categories_for(lab)
    for _name, like, shared in _instructors(lab, repo, policy_work, build_dir, target):
        if like is None:
            continue  # its check says so
        # The checks' own options (timeout aside): the same cache entries.
        options = policy.compile_options(
            lab, categories, shared["include_dirs"], policy_work, 120, like
        )
        for instructors in (shared["skeleton_file"], shared["reference_file"]):
            calls.append(functools.partial(facts_cache.cached_facts, instructors, **options))
    return calls


def _each_file(
    check: Callable[..., policy.LinkedCheck],
    unread: str,
    lab: labmeta.Lab,
    lab_dir: Path,
    repo: Path,
    policy_work: Path,
    build_dir: Path,
    target: str,
) -> list[policy.Violation]:
    violations: list[policy.Violation] = []
    for name, like, shared in _instructors(lab, repo, policy_work, build_dir, target):
        if like is None:
            violations.append(
                policy.Violation(
                    name,
                    0,
                    "",
                    NOT_GRADED + "it could not find how the build compiles this file "
                    f"({build_dir / 'compile_commands.json'}, target {target}), which the "
                    "grader configured",
                    True,
                )
            )
            continue
        judge = functools.partial(check, lab, lab_dir / name, like=like, **shared)
        checked = judge()
        if not checked.judged:  # once more: a busy machine's failure is not the student's
            checked = judge()
        violations += checked.violations
        if checked.fault:  # not the student's doing: the lab is not graded (refuse)
            violations.append(policy.Violation(name, 0, "", NOT_GRADED + checked.fault, True))
        elif not checked.judged:  # it built for grading but could not be checked: fail closed
            violations.append(
                policy.Violation(name, 0, "", unread + (checked.log.strip()[-300:] or "unknown"))
            )
    return violations


NOT_GRADED = (
    "not graded: the policy check could not run, a fault of the machine or the grader, "
    "not of this code (a batch grades the lab again when run again): "
)


def refuse(result: LabResult, violations: list[policy.Violation]) -> None:
    """The lab's grade once the policy check found something: no points, and
    refused (POLICY) for the student's code, or not graded (ERROR) where a
    finding is a fault of the machine or the grader (Violation.fault)."""
    faults = [v for v in violations if v.fault]
    result.status = LabStatus.ERROR if faults else LabStatus.POLICY
    result.points_correctness = result.points_performance = 0.0
    result.reason = "; ".join(violation_text(v) for v in faults or violations)


def reference_file(repo: Path, lab: labmeta.Lab, name: str) -> Path | None:
    """The reference solution's file, where this tree has one (not in a release)."""
    for root in (repo, toolchain.REPO):
        p = root / "solutions" / lab.id / name
        if p.is_file():
            return p
    return None
