"""DIR/report.html: the class at a glance, one self-contained page (plots
embedded, no script, opens offline) beside the gradebook. Per lab: the score
distribution, each correct submission's bandwidth against the floor, the
threshold and the reference's figure in the same batch, the commonest hints,
and who did not compile or was not graded; then every student with a link to
their feedback."""

from __future__ import annotations

import base64
import collections
import html
import io
import urllib.parse
from pathlib import Path

from ..engine import feedback
from ..infra import log, store
from ..infra.atomic import write_atomic
from ..labmeta import Lab
from ..results import StudentResult
from ..status import LabStatus
from ..similarity.report_html import report_section

STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child,td:last-child{text-align:left}.bad{color:#b00}img{max-width:100%}
section{margin-bottom:2.5em}"""


def whole_class(
    out: Path, results: list[StudentResult], progress=log.progress
) -> tuple[list[StudentResult], dict[str, str]]:
    """The class as the gradebook and the report list it: `results` (this
    run's students), and every other student of out/students whose result
    this grader signed (graded by an earlier run, not named on this command
    line); and each student of out/students left out, with why. Both said
    through `progress`: a gradebook never drops a student silently."""
    named = {r.student for r in results}
    students_dir = out / "students"
    earlier: list[StudentResult] = []
    left_out: dict[str, str] = {}
    folders = sorted(students_dir.iterdir()) if students_dir.is_dir() else []
    for folder in folders:
        if not folder.is_dir() or folder.name in named:
            continue
        res = store.load_result(folder / "result.json")
        if res is None:
            left_out[folder.name] = "no readable result.json"
        elif res.student != folder.name:
            left_out[folder.name] = f"its result.json is {res.student}'s"
        elif not store.signed(folder, res):
            left_out[folder.name] = "a result.json that this grader did not write"
        else:
            feedback.write_views(students_dir, res)  # what the student reads is this result
            earlier.append(res)
    if earlier:
        names = ", ".join(r.student for r in earlier)
        progress(f"[batch] the gradebook also lists {len(earlier)} graded earlier: {names}")
    for name, why in left_out.items():
        progress(f"[batch] the gradebook leaves out {name} ({students_dir / name}): {why}")
    return results + earlier, left_out


def write(out: Path, results: list[StudentResult], labs: list[Lab]) -> Path:
    path = out / "report.html"
    write_atomic(path, render(results, labs, report_section(out)))
    return path


def render(results: list[StudentResult], labs: list[Lab], similarity: str = "") -> str:
    results = sorted(results, key=lambda r: r.student)
    not_graded = [r for r in results if r.error]
    parts = [
        f"<!doctype html><html lang=en><meta charset=utf-8><title>Class report</title>"
        f"<style>{STYLE}</style><h1>Class report</h1>",
        f"<p>{len(results)} submissions, {len(results) - len(not_graded)} graded"
        + (
            f", <span class=bad>{len(not_graded)} not graded</span> (run the batch again): "
            + ", ".join(_student(r) for r in not_graded)
            if not_graded
            else ""
        )
        + ".</p>",
    ]
    for lab in labs:
        parts.append(_lab_section(lab, [r for r in results if not r.error]))
    parts.append(similarity)
    parts.append(_students_table(results, labs))
    return "\n".join(parts) + "\n</html>\n"


def _lab_section(lab: Lab, results: list[StudentResult]) -> str:
    rows = [l for r in results for l in r.labs if l.lab == lab.id]
    if not rows:
        return ""
    statuses = collections.Counter(l.status for l in rows if l.status != LabStatus.GRADED)
    rows = [l for l in rows if l.scored]  # not run, not graded: no score, counted by status
    full = sum(1 for l in rows if l.points == l.measured_max)
    zero = sum(1 for l in rows if l.points == 0)
    hints = collections.Counter(h for l in rows for h in l.hints[:1])
    fractions = [l.fraction for l in rows if l.correct and l.fraction is not None]
    reference = next((l.reference_fraction for l in rows if l.reference_fraction), None)
    out = [
        f"<section id='{html.escape(lab.id)}'><h2>{html.escape(lab.id)}: "
        f"{html.escape(lab.title)}</h2>",
        f"<p>{len(rows)} graded: {full} full marks, {len(rows) - full - zero} partial, "
        f"{zero} with no points"
        + "".join(f"; {n} {html.escape(s.replace('_', ' '))}" for s, n in statuses.items())
        + ".</p>",
    ]
    failed_build = [
        r.student
        for r in results
        for l in r.labs
        if l.lab == lab.id and l.status == LabStatus.BUILD_FAILED
    ]
    if failed_build:
        out.append(
            "<p class=bad>Did not compile: " + ", ".join(map(html.escape, failed_build)) + ".</p>"
        )
    plot = _plots(lab, rows, fractions, reference) if rows else ""
    if plot:
        out.append(f"<img alt='scores and bandwidth of {html.escape(lab.id)}' src='{plot}'>")
    if hints:
        out.append("<p>Commonest first hints:</p><table><tr><th>hint<th>students")
        out += [f"<tr><td>{html.escape(h)}<td>{n}" for h, n in hints.most_common(5)]
        out.append("</table>")
    return "\n".join(out) + "</section>"


def _plots(lab: Lab, rows, fractions: list[float], reference: float | None) -> str:
    """Both plots of a lab as one PNG data URL, or "" without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ""
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3))
    for ax in (left, right):
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    counts = collections.Counter(round(l.points, 1) for l in rows)
    left.bar([str(k) for k in sorted(counts)], [counts[k] for k in sorted(counts)], color="#4878a8")
    left.set(title="points", xlabel=f"points of {rows[0].measured_max}", ylabel="students")
    if fractions:
        right.plot(sorted(fractions), range(1, len(fractions) + 1), "o", color="#4878a8")
        right.axvline(lab.floor, color="#999", ls=":", label=f"floor {lab.floor}")
        right.axvline(lab.threshold, color="#333", ls="--", label=f"threshold {lab.threshold}")
        if reference:
            right.axvline(reference, color="#c44", label=f"reference {reference:.3f}")
        right.legend(fontsize=8, loc="lower right")
    right.set(
        title="bandwidth of correct submissions",
        xlabel="fraction of the copy ceiling",
        ylabel="submissions (sorted)",
    )
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _students_table(results: list[StudentResult], labs: list[Lab]) -> str:
    out = [
        "<section id=students><h2>Students</h2><table><tr><th>student"
        + "".join(f"<th>{html.escape(l.id[:2])}" for l in labs)
        + "<th>total<th>notes"
    ]
    for r in results:
        by_lab = {l.lab: l for l in r.labs}
        notes = "; ".join(([r.error] if r.error else []) + r.notes)
        out.append(
            f"<tr><td>{_student(r)}"
            + "".join(f"<td>{html.escape(feedback.lab_cell(by_lab.get(l.id)))}" for l in labs)
            + f"<td>{r.points:g}/{r.measured_max}<td>{html.escape(notes[:200])}"
        )
    return "\n".join(out) + "</table></section>"


def _student(r: StudentResult) -> str:
    """The student's id, linking to their feedback (relative: the folder may move)."""
    href = html.escape(urllib.parse.quote(f"students/{r.student}/feedback.md"))
    return f"<a href='{href}'>{html.escape(r.student)}</a>"
