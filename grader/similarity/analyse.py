"""One similarity run over a class: every lab, every pair of students, every
student against the known corpus. Evidence for a person to read; nothing
here touches a grade."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import labmeta
from . import compare, documents
from .compare import Run, Settings


@dataclass
class Result:
    runs: dict[str, Run]  # lab id -> its run
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    known: int = 0  # corpus documents, the references included

    @property
    def flagged(self) -> list[compare.Match]:
        """Known sources first in each lab, then the best scores."""
        return sorted(
            (m for r in self.runs.values() for m in r.matches if m.flagged),
            key=lambda m: (m.lab, m.b.kind == "student", -m.score, m.a.owner, m.b.owner),
        )


def analyse(
    specs: dict[str, str],
    course: labmeta.Course,
    corpus: Sequence[Path] = (),
    settings: Settings = Settings(),
    solutions: Path = documents.REPO / "solutions",
    skeletons: Path = documents.REPO / "labs",
) -> Result:
    """specs: submission -> student id (as `batch` names them)."""
    start = time.perf_counter()
    students, notes = documents.student_documents(specs, course)
    return analyse_documents(students, course, corpus, settings, solutions, skeletons, notes, start)


def analyse_documents(
    students: list[documents.Document],
    course: labmeta.Course,
    corpus: Sequence[Path] = (),
    settings: Settings = Settings(),
    solutions: Path = documents.REPO / "solutions",
    skeletons: Path = documents.REPO / "labs",
    notes: list[str] | None = None,
    start: float | None = None,
) -> Result:
    start = time.perf_counter() if start is None else start
    notes = list(notes or [])
    known = documents.reference_documents(course, solutions)
    if not known:
        notes.append(f"no reference solutions at {solutions}: copies of them are not looked for")
    for folder in corpus:
        docs, corpus_notes = documents.corpus_documents(Path(folder), course)
        known += docs
        notes += corpus_notes
    boilerplate = documents.boilerplate_texts(course, skeletons)
    runs = {}
    for lab in course.labs:
        hashes = compare.boilerplate_hashes(boilerplate.get(lab.id, []))
        runs[lab.id] = compare.compare_lab(
            lab.id,
            [d for d in students if d.lab == lab.id],
            [d for d in known if d.lab in (lab.id, None)],
            hashes,
            settings,
        )
    return Result(runs, notes, time.perf_counter() - start, len(known))
