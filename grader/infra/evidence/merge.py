"""Partial gpucheck runs of one commit joined into one (`gpucheck --merge`): a GPU
call has a time limit, so the parts of one piece of evidence often come from
several calls."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from . import load
from .records import GpuCheck, LabEvidence, ScriptRun


def merge(files: list[Path]) -> GpuCheck:
    """Evidence from several partial runs of one commit (a GPU call has a time
    limit), as one: the machine and command of the first, every part, lab
    entries merged part by part, sandboxed batches joined, seconds added."""
    runs = [load(f, GpuCheck) for f in files]
    merged = copy.deepcopy(runs[0])
    for ev in runs[1:]:
        for f in dataclasses.fields(ev):
            value, have = getattr(ev, f.name), getattr(merged, f.name)
            if value is None or f.name in ("machine", "command", "schema_version", "kind"):
                continue
            if f.name == "labs":
                into = merged.labs if merged.labs is not None else {}
                for lab_id, entry in value.items():
                    _merge_lab(into.setdefault(lab_id, LabEvidence()), entry)
                merged.labs = into
            elif f.name == "parts":
                merged.parts = (have or []) + value
            elif f.name == "sandbox" and have is not None:
                merged.sandbox = join_sandbox(have, value)
            elif f.name == "seconds":
                merged.seconds = round((have or 0) + value, 1)
            else:
                setattr(merged, f.name, value)
    return merged


def _merge_lab(into: LabEvidence, entry: LabEvidence) -> None:
    """What a later run recorded of a lab replaces that part, and only that part."""
    empty = LabEvidence()
    for f in dataclasses.fields(entry):
        value = getattr(entry, f.name)
        if value != getattr(empty, f.name):
            setattr(into, f.name, value)


def join_sandbox(a: ScriptRun, b: ScriptRun) -> ScriptRun:
    """Two sandboxed batches over different labs, as one: every batch kept."""
    runs = (a.batches or [a]) + (b.batches or [b])
    # A batch that did not end (no exit code) failed as surely as one that exited 1.
    return ScriptRun(
        batches=runs,
        exit_code=max(1 if r.exit_code is None else r.exit_code for r in runs),
        seconds=round(sum(r.seconds for r in runs), 1),
        full_marks=all(r.full_marks for r in runs),
        labs_graded=sorted(l for r in runs for l in (r.labs_graded or [])),
        output="\n".join(r.output for r in runs),
    )
