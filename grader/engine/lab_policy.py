"""A lab's policy findings as the grade states them, and the linked check of
its files against the skeleton and the reference (policy.check_linked), as
grade_lab runs it."""

from __future__ import annotations

from pathlib import Path

from .. import labmeta
from ..infra import toolchain
from . import policy


def violation_text(v: policy.Violation) -> str:
    found = f" ({v.found})" if v.found else ""
    return f"{v.file}:{v.line}{found}: {v.why}"


def linked_violations(
    lab: labmeta.Lab, lab_dir: Path, repo: Path, policy_work: Path
) -> list[policy.Violation]:
    """The linked policy check of each of the lab's files against the skeleton
    and the reference; a file that built but could not be checked fails closed."""
    violations: list[policy.Violation] = []
    for name in lab.files:
        reference = reference_file(repo, lab, name)
        if reference is None:
            continue  # a student's own copy: the instructor's batch runs this check
        checked = policy.check_linked(
            lab,
            lab_dir / name,
            skeleton_file=toolchain.REPO / "labs" / lab.id / name,
            reference_file=reference,
            include_dirs=[repo / "common"],
            work=policy_work,
        )
        violations += checked.violations
        if not checked.judged:
            # It built for grading but could not be checked: fail closed (the
            # batch's preflight checks the reference the same way first).
            violations.append(
                policy.Violation(
                    name,
                    0,
                    "",
                    "the policy check could not compile or read this file the "
                    "way it must: " + (checked.log.strip()[-300:] or "unknown"),
                )
            )
    return violations


def reference_file(repo: Path, lab: labmeta.Lab, name: str) -> Path | None:
    """The reference solution's file, where this tree has one (not in a release)."""
    for root in (repo, toolchain.REPO):
        p = root / "solutions" / lab.id / name
        if p.is_file():
            return p
    return None
