#!/usr/bin/env python3
"""How well the similarity check separates copies from honest work, at
several thresholds: builds the fixtures (make_copies.py), compares every
pair once with no threshold, then counts per threshold the copies found
and the honest pairs flagged. Writes measured.json and measured.md here.

usage: measure.py [--out DIR]   (DIR: where the fixtures go; default a temporary folder)"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(HERE)]
import make_copies  # noqa: E402
from grader import labmeta  # noqa: E402
from grader.similarity import analyse, compare, documents, normalise  # noqa: E402

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def source_of(m: compare.Match) -> str:
    return (
        m.b.owner
        if m.b.kind == "student"
        else "reference"
        if m.b.kind == "reference"
        else m.b.owner.removeprefix("corpus/").split(": ")[0]  # a function: its file
    )


def honest_of(matches: list[compare.Match], key: dict) -> list[compare.Match]:
    authors = set(key["honest"]) | {"public/reduce_sample_style.cu", make_copies.SAMPLES}
    return [m for m in matches if m.a.owner in authors and source_of(m) in authors]


def evaluate(
    matches: list[compare.Match], key: dict, threshold: float, min_match: int, scores: list[float]
) -> dict:
    hit = {(m.a.owner, m.lab, source_of(m)) for m in matches if m.flagged}
    hit |= {(b, lab, a) for a, lab, b in hit}  # a pair of students is found either way round
    found = [c for c in key["copies"] if (c["student"], c["lab"], c["source"]) in hit]
    flagged = [m for m in honest_of(matches, key) if m.flagged]
    missed = [c for c in key["copies"] if c not in found]
    return {
        "threshold": threshold,
        "min_match": min_match,
        "copies": len(key["copies"]),
        "found": len(found),
        "found_fraction": round(len(found) / len(key["copies"]), 4),
        "missed": missed[:20],
        "honest_pairs": len(scores),
        "honest_flagged": len(flagged),
        "honest_flagged_pairs": [
            f"{m.lab}: {m.a.owner} ~ {source_of(m)} {m.score:.2f}" for m in flagged
        ],
        "highest_honest": scores[:5],
    }


def main(argv: list[str]) -> int:
    dest = (
        Path(argv[argv.index("--out") + 1])
        if "--out" in argv
        else Path(tempfile.mkdtemp(prefix="similarity-"))
    )
    key = make_copies.make(dest)
    subs = sorted(p for p in (dest / "subs").iterdir())
    course = labmeta.load()
    students, _ = documents.student_documents({str(p): p.name for p in subs}, course)
    # Every honest pair's score: nothing flagged (so nothing grouped), nothing pruned.
    every = analyse.analyse_documents(
        students,
        course,
        [dest / "corpus"],
        compare.Settings(threshold=1.01, min_match=0, prefilter=0),
    )
    scores = sorted(
        (
            round(m.score, 3)
            for m in honest_of([m for r in every.runs.values() for m in r.matches], key)
        ),
        reverse=True,
    )
    rows = []
    for threshold, min_match in [(t, compare.MIN_MATCH) for t in THRESHOLDS] + [
        (compare.THRESHOLD, 0)
    ]:
        result = analyse.analyse_documents(
            students, course, [dest / "corpus"], compare.Settings(threshold, min_match)
        )
        matches = [m for r in result.runs.values() for m in r.matches]
        rows.append(evaluate(matches, key, threshold, min_match, scores))
    # What the canonical order of independent statements buys: the same run
    # with statements left in the order the student wrote them.
    saved = normalise._canonical_order
    normalise._canonical_order = lambda run: run
    try:
        plain, _ = documents.student_documents({str(p): p.name for p in subs}, course)
        result = analyse.analyse_documents(plain, course, [dest / "corpus"])
        row = evaluate(
            [m for r in result.runs.values() for m in r.matches],
            key,
            compare.THRESHOLD,
            compare.MIN_MATCH,
            scores,
        )
        rows.append({**row, "without_reordering": True})
    finally:
        normalise._canonical_order = saved
    report = {
        "command": "python3 tests/similarity/measure.py",
        "default_threshold": compare.THRESHOLD,
        "min_match": compare.MIN_MATCH,
        "k": compare.K,
        "window": compare.WINDOW,
        "submissions": len(subs),
        "seconds": round(result.seconds, 2),
        "rows": rows,
    }
    (HERE / "measured.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        "# Similarity: copies found and honest pairs flagged",
        "",
        f"`{report['command']}` ({len(subs)} submissions: {len(key['copies'])} disguised "
        f"or verbatim copies, honest students {', '.join(key['honest'])}; k={compare.K}, "
        f"window={compare.WINDOW}; {result.seconds:.1f} s).",
        "",
        "| threshold | min match | copies found | honest pairs flagged | highest honest |",
        "| ---: | ---: | ---: | ---: | --- |",
    ]
    lines += [
        f"| {r['threshold']:.2f}{' (statements not reordered)' * r.get('without_reordering', False)} | {r['min_match']} | {r['found']}/{r['copies']} "
        f"({r['found_fraction']:.0%}) | {r['honest_flagged']}/{r['honest_pairs']} | "
        f"{', '.join(map(str, r['highest_honest'][:3]))} |"
        for r in rows
    ]
    (HERE / "measured.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
