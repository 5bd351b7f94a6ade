"""`hint NN`: the next hint of a lab, one rung at a time (grader/engine/hint_ladder.py).

Each call shows one more hint and records the count in the lab's .hints-taken;
`--again` shows the hints taken so far and takes none. The count is shown in
the feedback and changes no points."""

from __future__ import annotations

from pathlib import Path

from .. import labmeta
from ..engine import hint_ladder
from ..infra import toolchain


def _lab_dir(lab_id: str, labs_dir: Path) -> tuple[labmeta.Lab, Path]:
    lab = labmeta.load().lab(lab_id)  # KeyError naming the labs: exit 2
    return lab, labs_dir / lab.id


def _hints(lab: labmeta.Lab, lab_dir: Path) -> list[hint_ladder.Hint]:
    try:
        return hint_ladder.load(lab_dir)
    except FileNotFoundError:
        raise ValueError(
            f"lab {lab.id} has no hints ({lab_dir.name}/{hint_ladder.HINTS} is missing); "
            "its handout, README.md, has the help there is"
        ) from None


def shown(hint: hint_ladder.Hint, number: int, total: int, again: bool = False) -> str:
    """A hint under its header: which rung, and (a new one) how many are left."""
    if again:
        return f"hint {number} of {total} ({hint.kind})\n\n{hint.text}\n"
    left = total - number
    after = (
        f"{left} left: run the same command for it"
        if left == 1
        else f"{left} left: run the same command for the next"
        if left
        else "none left"
    )
    return f"hint {number} of {total} ({hint.kind}); {after}\n\n{hint.text}\n"


def run(lab_id: str, again: bool = False, labs_dir: Path | None = None, out=print) -> int:
    lab, lab_dir = _lab_dir(lab_id, labs_dir or toolchain.REPO / "labs")
    hints = _hints(lab, lab_dir)
    taken = min(hint_ladder.taken(lab_dir), len(hints))
    command = f"python3 -m grader hint {lab.id[:2]}"
    if again:
        if not taken:
            out(f"no hint of lab {lab.id} taken yet: `{command}` shows the first")
        for number, hint in enumerate(hints[:taken], 1):
            out(shown(hint, number, len(hints), again=True))
        return 0
    if taken == len(hints):
        out(
            f"all {len(hints)} hints of lab {lab.id} are taken: `{command} --again` shows "
            "them; the handout's questions and `python3 -m grader grade` take it from here"
        )
        return 0
    out(shown(hints[taken], taken + 1, len(hints)))
    hint_ladder.record(lab_dir, taken + 1)
    return 0
