"""The predictions a student writes in a lab's ANSWERS.md before measuring, one
line per key, exactly `Prediction (KEY): VALUE`:

    Prediction (fraction_of_copy): 0.25
    Prediction (gbps): 900

`grader grade` and `grader profile` print the measured figure beside each
filled prediction: a prediction is worth making when it is checked. They are
read, never scored; a value that is not a number is left out with a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ANSWERS = "ANSWERS.md"
# Every key a handout may ask for, with what `grade` or `profile` measures for it.
GRADE_KEYS = {
    "fraction_of_copy": "of the copy",  # the lab's GB/s over the device copy's
    "gbps": "GB/s",  # GB/s of input read at the graded size
}
# The profile counters, by the row of `grader profile` (profile_ncu.METRICS) they predict.
PROFILE_KEYS = {
    "bank_conflicts": "bank_conflicts",
    "warps_active_pct": "occupancy_pct",
    "bytes_per_request": "bytes_per_load",
}
KEYS = (*GRADE_KEYS, *PROFILE_KEYS)

LINE = re.compile(r"^[ \t]*Prediction \((?P<key>[^)\n]*)\):(?P<value>[^\n]*)$", re.M)
# What may stand around the number: a unit or a sign of approximation.
_DECOR = re.compile(r"^(?:~|about|approx\.?|≈)\s*|\s*(?:GB/s|%|x|bytes)$", re.I)


@dataclass
class Predictions:
    values: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def number(text: str) -> float | None:
    """The number a prediction states (`0.25`, `1,200 GB/s`, `~40%`), else None."""
    text = text.strip().strip("*_` ")
    while (stripped := _DECOR.sub("", text)) != text:
        text = stripped
    try:
        return float(text.replace(",", "").replace("_", ""))
    except ValueError:
        return None


def parse(text: str, where: str = ANSWERS) -> Predictions:
    """The filled predictions of an ANSWERS.md; an empty line is no prediction,
    an unknown key or a value that is no number is left out with a note."""
    out = Predictions()
    for m in LINE.finditer(text):
        key, value = m["key"].strip(), m["value"].strip()
        if not value:
            continue
        if key not in KEYS:
            out.notes.append(f"{where}: Prediction ({key}) is no key the grader knows; ignored")
        elif (v := number(value)) is None:
            out.notes.append(
                f"{where}: Prediction ({key}): {value!r} is not a number; not compared"
            )
        else:
            out.values[key] = v
    return out


def read(lab_dir: Path) -> Predictions:
    path = lab_dir / ANSWERS
    try:
        return parse(
            path.read_text(encoding="utf-8", errors="replace"), f"{lab_dir.name}/{ANSWERS}"
        )
    except (FileNotFoundError, IsADirectoryError):
        return Predictions()


def _shown(v: float) -> str:
    return f"{v:,.3g}" if abs(v) < 10 else f"{v:,.0f}"


def beside_bandwidth(p: Predictions, gbps: float | None, fraction: float | None) -> list[str]:
    """'you predicted X, measured Y' for each filled bandwidth prediction, when
    a bandwidth was measured."""
    measured = {"fraction_of_copy": fraction, "gbps": gbps}
    return [
        f"you predicted {_shown(p.values[key])} {unit}, measured {_shown(got)}"
        for key, unit in GRADE_KEYS.items()
        if key in p.values and (got := measured[key]) is not None
    ]


def beside_counter(p: Predictions, metric: str) -> str:
    """'you predicted X' for the profile row `metric`, when the student did."""
    for key, row in PROFILE_KEYS.items():
        if row == metric and key in p.values:
            return f"you predicted {_shown(p.values[key])}"
    return ""
