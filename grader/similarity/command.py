"""`python3 -m grader similarity OUT`: the similarity report of a batch.

Reads who was graded from OUT/students/*/result.json (each names its
submission), compares, and writes OUT/similarity.json, OUT/similarity.html
and OUT/report.html again with its Similarity section. Grades are never
read for this and never written."""

from __future__ import annotations

import dataclasses
import datetime
import sys
from pathlib import Path

from .. import labmeta
from ..infra import store
from ..infra.atomic import write_atomic
from ..batch import class_report
from ..results import StudentResult
from . import report_html

SHOWN = 40  # pairs printed; the page has them all


def _graded(out: Path) -> list[StudentResult]:
    students = out / "students"
    if not students.is_dir():
        raise ValueError(f"{out} holds no students/ folder: give the --out folder of a batch")
    results = [
        r for p in sorted(students.glob("*/result.json")) if (r := store.load_result(p)) is not None
    ]
    if not results:
        raise ValueError(f"{students} holds no readable result.json: run the batch first")
    return results


def run(
    out: Path,
    corpus: list[Path],
    threshold: float | None,
    min_match: int | None,
    lab_ids: list[str] | None = None,
) -> int:
    try:
        from . import analyse, compare
    except ImportError as e:
        print(
            f"error: the similarity check needs copydetect ({e}): "
            "python3 -m pip install -r requirements.txt",
            file=sys.stderr,
        )
        return 2
    course = labmeta.load()
    if lab_ids:
        keep = {course.lab(x).id for x in lab_ids}  # an unknown lab: KeyError, exit 2
        course = dataclasses.replace(course, labs=tuple(l for l in course.labs if l.id in keep))
    if threshold is not None and not 0 < threshold <= 1:
        raise ValueError(f"--threshold must be above 0 and at most 1, not {threshold}")
    if min_match is not None and min_match < 0:
        raise ValueError(f"--min-match must be 0 or more, not {min_match}")
    settings = compare.Settings(
        threshold=compare.THRESHOLD if threshold is None else threshold,
        min_match=compare.MIN_MATCH if min_match is None else min_match,
    )
    results = _graded(out)
    specs = {r.origin: r.student for r in results if r.origin}
    result = analyse.analyse(specs, course, corpus, settings)
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    summary = {
        "when": when,
        "students": len(specs),
        "settings": {
            "threshold": settings.threshold,
            "min_match": settings.min_match,
            "k": compare.K,
            "window": compare.WINDOW,
        },
        "known": result.known,
        "corpus": [str(c) for c in corpus],
        "seconds": round(result.seconds, 2),
        "notes": result.notes,
        "labs": {
            lab: {
                "documents": r.documents,
                "pairs": r.pairs,
                "compared": r.compared,
                "flagged": sum(m.flagged for m in r.matches),
            }
            for lab, r in result.runs.items()
        },
    }
    flagged = result.flagged
    write_atomic(out / "similarity.json", report_html.summary_json(flagged, summary))
    write_atomic(out / "similarity.html", report_html.render(flagged, summary))
    graded_labs = {l.lab for r in results for l in r.labs}
    class_report.write(out, results, [l for l in labmeta.load().labs if l.id in graded_labs])
    for note in result.notes:
        print(f"[similarity] {note}")
    shown = [m for m in flagged if not m.via]
    for m in shown[:SHOWN]:
        print(f"[similarity] {m.lab}: {m.a.owner} ~ {m.b.owner} ({m.b.kind}) {m.score:.0%}")
    if len(shown) > SHOWN:
        print(f"[similarity] ... and {len(shown) - SHOWN} more in similarity.html")
    print(
        f"[similarity] {len(shown)} pair(s) at or above {settings.threshold:.0%}"
        + (
            f", and {len(flagged) - len(shown)} pairs of students who match one known source"
            if len(flagged) > len(shown)
            else ""
        )
        + f" ({result.seconds:.1f} s); "
        "nothing here changes a grade. "
        f"Report: {out / 'similarity.html'}"
    )
    return 0
