"""OUT/similarity.html (every flagged pair side by side, the matching lines
marked) and the short section of OUT/report.html that points at it. Plain
HTML, no script: it opens offline, as the class report does. Standard
library only, so the class report can show the section without copydetect."""

from __future__ import annotations

import html
import json
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # compare needs copydetect; the class report's section must not
    from .compare import Match

NOT_A_GRADE = (
    "Flagging is evidence for a person to read, never a grade: nothing here changes "
    "anyone's points. Honest solutions to a short kernel look alike; read the pair "
    "before you ask the student about it."
)
STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}
pre{background:#f7f7f7;padding:.5em;overflow-x:auto;font-size:13px;margin:0 0 1em}
.hit{background:#ffe08a;display:inline-block;width:100%}.ln{color:#999;user-select:none}
.note{background:#eef4ff;border-left:4px solid #4878a8;padding:.5em 1em}section{margin-bottom:2.5em}"""


def _student_link(owner: str) -> str:
    href = html.escape(urllib.parse.quote(f"students/{owner}/feedback.md"))
    return f"<a href='{href}'>{html.escape(owner)}</a>"


def _who(m: Match, side: str) -> str:
    doc = m.a if side == "a" else m.b
    if doc.kind == "student":
        return _student_link(doc.owner)
    if doc.kind == "reference":
        return f"the reference solution of {html.escape(m.lab)}"
    return f"corpus file {html.escape(doc.owner)}"


def _code(m: Match, side: str) -> str:
    doc, marked = (m.a, m.a_lines) if side == "a" else (m.b, m.b_lines)
    out = []
    for k, part in enumerate(doc.parts):
        lines = part.code.splitlines()
        rows = []
        for offset, line in enumerate(lines):
            number = part.first_line + offset
            text = f"<span class=ln>{number:4d}  </span>{html.escape(line)}"
            rows.append(f"<span class=hit>{text}</span>" if number in marked.get(k, ()) else text)
        out.append(f"<p>{html.escape(part.label)}</p><pre>" + "\n".join(rows) + "</pre>")
    return "".join(out)


def render(flagged: list[Match], summary: dict) -> str:
    """flagged: every flagged pair; those explained by a known source (Match.via)
    are counted under it rather than shown one by one."""
    s = summary["settings"]
    grouped = [m for m in flagged if m.via]
    flagged = [m for m in flagged if not m.via]
    parts = [
        "<!doctype html><html lang=en><meta charset=utf-8><title>Similarity report</title>"
        f"<style>{STYLE}</style><h1>Similarity report</h1>",
        f"<p class=note>{html.escape(NOT_A_GRADE)}</p>",
        f"<p>Each lab's fenced code, every pair of students and every student against "
        f"{summary['known']} known sources (the reference solutions"
        + (", " + ", ".join(map(html.escape, summary["corpus"])) if summary["corpus"] else "")
        + f"). A pair is flagged when at least {s['threshold']:.0%} of one side's code is "
        f"found in the other, over at least {s['min_match']} normalised characters "
        "(names, aliases, comments, layout and the order of independent statements do not "
        "count; the skeleton and the harness never match). "
        f"<a href='report.html'>Class report</a>.</p>",
        "<table><tr><th>lab<th>students with code<th>pairs<th>compared in full<th>flagged",
    ]
    parts += [
        f"<tr><td>{html.escape(lab)}<td>{r['documents']}<td>{r['pairs']}<td>{r['compared']}"
        f"<td>{r['flagged']}"
        for lab, r in summary["labs"].items()
    ]
    parts.append("</table>")
    if summary["notes"]:
        parts.append(
            "<p>Notes:</p><ul>"
            + "".join(f"<li>{html.escape(n)}" for n in summary["notes"])
            + "</ul>"
        )
    if grouped:
        parts.append(
            f"<p>{len(grouped)} further pair(s) of students are alike because both "
            "match the same known source; each student's match with that source is "
            "listed below instead.</p>"
        )
    if not flagged:
        parts.append("<p>No pair reaches the threshold.</p>")
    else:
        parts.append("<h2>Flagged pairs</h2><table><tr><th>lab<th>student<th>matches<th>score")
        parts += [
            f"<tr><td>{html.escape(m.lab)}<td>{_who(m, 'a')}<td>{_who(m, 'b')}"
            f"<td><a href='#pair-{k}'>{m.score:.0%}</a>"
            for k, m in enumerate(flagged, 1)
        ]
        parts.append("</table>")
    for k, m in enumerate(flagged, 1):
        parts.append(
            f"<section id='pair-{k}'><h3>{k}. {html.escape(m.lab)}: {_who(m, 'a')} and "
            f"{_who(m, 'b')}, {m.score:.0%}</h3><div class=pair><div>{_code(m, 'a')}</div>"
            f"<div>{_code(m, 'b')}</div></div></section>"
        )
    return "\n".join(parts) + "\n</html>\n"


def summary_json(flagged: list[Match], summary: dict) -> str:
    pairs = [
        {
            "lab": m.lab,
            "student": m.a.owner,
            "other": m.b.owner,
            "other_kind": m.b.kind,
            "score": round(m.score, 4),
            "matched_chars": m.matched,
            "student_lines": sorted(n for lines in m.a_lines.values() for n in lines),
        }
        for m in flagged
        if not m.via
    ]
    return json.dumps({**summary, "flagged": pairs}, indent=1) + "\n"


SECTION_ROWS = 30  # the class report lists the first pairs; similarity.html has them all


def report_section(out: Path) -> str:
    """The class report's section: the flagged pairs of OUT/similarity.json
    with links into similarity.html, or how to make them."""
    path = out / "similarity.json"
    head = "<section id=similarity><h2>Similarity</h2>"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pairs = list(data["flagged"])
        threshold = float(data["settings"]["threshold"])
    except (OSError, ValueError, KeyError, TypeError):
        return (
            head + "<p>Not run for this batch: <code>python3 -m grader similarity "
            f"{html.escape(str(out))}</code> compares every pair of students and every "
            "student with the reference solutions.</p></section>"
        )
    rows = [
        f"<tr><td>{html.escape(str(p['lab']))}<td>{_student_link(str(p['student']))}<td>"
        + (
            _student_link(str(p["other"]))
            if p.get("other_kind") == "student"
            else "the reference solution"
            if p.get("other_kind") == "reference"
            else "corpus file " + html.escape(str(p["other"]))
        )
        + f"<td><a href='similarity.html#pair-{k}'>{float(p['score']):.0%}</a>"
        for k, p in enumerate(pairs[:SECTION_ROWS], 1)
    ]
    more = (
        f"<p>... and {len(pairs) - SECTION_ROWS} more in similarity.html.</p>"
        if len(pairs) > SECTION_ROWS
        else ""
    )
    table = (
        "<table><tr><th>lab<th>student<th>matches<th>score" + "".join(rows) + "</table>" + more
        if rows
        else ""
    )
    # A later batch in the same folder keeps this file: say which run it is.
    when = (
        f" (run {html.escape(str(data.get('when', '?')))} over {data.get('students', '?')} "
        "students; run it again after grading more)"
    )
    return (
        head + f"<p class=note>{html.escape(NOT_A_GRADE)}</p><p>{len(pairs)} pair(s) at or "
        f"above {threshold:.0%}{when}: each opens side by side, the matching lines marked, "
        "in <a href='similarity.html'>similarity.html</a>.</p>" + table + "</section>"
    )
