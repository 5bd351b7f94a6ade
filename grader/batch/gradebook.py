"""OUT/gradebook.csv and OUT/report.html from a class's results: the one
place both a local batch and a Slurm batch write them."""

from __future__ import annotations

from pathlib import Path

from ..engine.feedback import gradebook_csv
from ..infra.atomic import write_atomic
from ..labmeta import Lab
from ..results import StudentResult
from . import class_report


def write(out: Path, results: list[StudentResult], labs: list[Lab], progress, tag: str) -> None:
    """The gradebook and the class report of `results`, named through
    `progress` after `tag` ("batch" or "slurm", the prefix of the batch's lines)."""
    write_atomic(out / "gradebook.csv", gradebook_csv(results, [lab.id for lab in labs]))
    progress(
        f"[{tag}] gradebook: {out / 'gradebook.csv'}, "
        f"report: {class_report.write(out, results, labs)}"
    )
