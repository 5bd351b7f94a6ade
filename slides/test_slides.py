"""Tests of the self-study slides (meson test suite `slides`).

- every lab in grader/labs.toml has a deck, and so does the introduction;
- every figure a deck names exists, and every PNG stays small;
- the results tables between the markers match tests/gpu_runs/h200/gpucheck.json
  (make_figures.py --check), and no measured GB/s figure sits outside them;
- the tables follow another GPU's run (a modified copy of the JSON);
- with matplotlib: the figures regenerate (into a temporary folder);
- with pandoc and pdflatex: every deck builds to PDF (into a temporary folder);
- in every lab's deck the "Predict, then measure" slide comes before the section
  "# Debrief: measured on an H200", which holds the measured tables;
- no deck's code block holds a statement of its lab's solution fence (the
  graded code lives in solutions/NN/walkthrough.md, which a release leaves out).

Nothing here writes into the source tree.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SLIDES = Path(__file__).resolve().parent
REPO = SLIDES.parent
sys.path.insert(0, str(SLIDES))

import build  # noqa: E402
import make_figures as mf  # noqa: E402  (imports matplotlib only when drawing)

sys.path.insert(0, str(REPO))
from grader import labmeta  # noqa: E402  (the course file's one reader)
from grader.engine.policy import fence_statements  # noqa: E402  (the fences' statements, shared)

LAB_IDS = [lab.id for lab in labmeta.load().labs]
DECKS = [mf.INTRO] + LAB_IDS


def deck(stem: str) -> Path:
    return SLIDES / f"{stem}.md"


def outside_markers(text: str) -> str:
    head, rest = text.split(mf.BEGIN, 1)
    return head + rest.split(mf.END, 1)[1]


def run_make_figures(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SLIDES / "make_figures.py"), *args], capture_output=True, text=True
    )


@pytest.mark.parametrize("stem", DECKS)
def test_deck_exists_with_one_results_block(stem):
    path = deck(stem)
    assert path.is_file(), f"no deck {path.name} for {stem} (grader/labs.toml lists it)"
    text = path.read_text()
    assert text.count(mf.BEGIN) == 1 and text.count(mf.END) == 1, (
        f"{path.name}: needs one {mf.BEGIN} ... {mf.END}"
    )
    assert text.startswith("# "), f"{path.name}: the first line is the deck title (# ...)"


@pytest.mark.parametrize("stem", DECKS)
def test_every_named_figure_exists(stem):
    text = deck(stem).read_text()
    named = mf.figures_named(text)
    assert named, f"{stem}: names no figure"
    missing = [f for f in named if not (SLIDES / f).is_file()]
    assert not missing, f"{stem}: missing figures {missing}; run python3 slides/make_figures.py"


@pytest.mark.parametrize("stem", DECKS)
def test_no_measured_bandwidth_outside_the_generated_block(stem):
    # Measured numbers come from the JSON, so they live between the markers only.
    stray = re.findall(r"\d[\d,.]*\s*GB/s", outside_markers(deck(stem).read_text()))
    assert not stray, f"{stem}: hand-written bandwidth figures {stray}; let make_figures write them"


DEBRIEF = re.compile(r"^# Debrief: measured on (?:an H200|two H200s|two H100s)\s*$", re.M)
PREDICT = re.compile(r"^#+ Predict, then measure\s*$", re.M)


@pytest.mark.parametrize("stem", LAB_IDS)
def test_the_questions_come_before_the_debrief(stem):
    """A question comes before the figure it asks about: the deck's "Predict, then
    measure" slide (where the handout asks to predict), then its debrief, which
    holds the measured (generated) tables."""
    text = deck(stem).read_text()
    debrief = DEBRIEF.search(text)
    assert debrief, f"{stem}: no section '# Debrief: measured on an H200' for the measured tables"
    predict = PREDICT.search(text)
    handout = REPO / "labs" / stem / "README.md"
    if handout.is_file() and PREDICT.search(handout.read_text()):
        assert predict, f"{stem}: the handout asks to predict; the deck has no such slide"
    assert predict is None or predict.start() < debrief.start(), (
        f"{stem}: the 'Predict, then measure' slide must come before the debrief"
    )
    late = [line for line in text[debrief.end() :].splitlines() if "Predict" in line]
    assert not late, f"{stem}: questions after the debrief: {late}"
    begin = text.index(mf.BEGIN)
    before = text[begin + len(mf.BEGIN) : debrief.start()] if begin < debrief.start() else ""
    assert not before.strip(), (
        f"{stem}: measured tables ({mf.BEGIN}) come before the debrief's heading"
    )


def test_tables_match_the_committed_run():
    r = run_make_figures("--check")
    assert r.returncode == 0, r.stderr + r.stdout


def test_figures_are_small():
    pngs = sorted((SLIDES / "figures").glob("*.png"))
    assert pngs
    big = [f"{p.name}: {p.stat().st_size // 1024} KiB" for p in pngs if p.stat().st_size > 200_000]
    assert not big, big


def test_figures_follow_the_decks():
    named = {f for stem in DECKS for f in mf.figures_named(deck(stem).read_text())}
    on_disk = {f"figures/{p.name}" for p in (SLIDES / "figures").glob("*.png")}
    assert on_disk <= named, f"figures no deck names: {sorted(on_disk - named)}"


def test_tables_follow_another_gpus_run(tmp_path):
    """A run on another GPU, one lab missing: the tables follow, nothing else moves."""
    data = json.loads(mf.DEFAULT_JSON.read_text())
    data["machine"]["nvidia_smi"] = ["NVIDIA Example GPU, 999.1, 80000 MiB, 1 MHz, 1 MHz"]
    # The last lab gpucheck runs (lab 12, across GPUs, has its own script).
    dropped = [lab.id for lab in labmeta.load().labs if not lab.spans_gpus][-1]
    data["labs"].pop(dropped, None)
    run = tmp_path / "gpucheck.json"
    run.write_text(json.dumps(data))
    decks_dir = tmp_path / "decks"
    decks_dir.mkdir()
    for stem in DECKS:
        shutil.copy(deck(stem), decks_dir)
    r = run_make_figures(str(run), "--decks-dir", str(decks_dir), "--tables-only")
    assert r.returncode == 0, r.stderr
    for stem in DECKS:
        new, old = (decks_dir / f"{stem}.md").read_text(), deck(stem).read_text()
        assert outside_markers(new) == outside_markers(old), (
            f"{stem}: text outside the markers moved"
        )
    assert "NVIDIA Example GPU" in (decks_dir / f"{mf.INTRO}.md").read_text()
    assert "has no run of" in (decks_dir / f"{dropped}.md").read_text()


def test_a_floor_a_call_beats_is_shown_beaten(tmp_path):
    """Deck 00's floor slide computes its claim from the run: a call below its floor
    is named there, and the lab's table shows its time / floor below 1."""
    data = json.loads(mf.DEFAULT_JSON.read_text())
    bench = data["labs"]["09_shuffle_vector_loads"]["bench"]["bench-09_shuffle_vector_loads-sum"]
    s = next(x for x in bench["sizes"] if x["log2n"] == 20)
    s["median_ms"] = 0.9 * s["launch_us"] / 1e3  # 10% below the launch, the floor there
    s["gbps"] = 4 * s["n"] / (s["median_ms"] * 1e6)
    run = tmp_path / "gpucheck.json"
    run.write_text(json.dumps(data))
    decks_dir = tmp_path / "decks"
    decks_dir.mkdir()
    for stem in DECKS:
        shutil.copy(deck(stem), decks_dir)
    r = run_make_figures(str(run), "--decks-dir", str(decks_dir), "--tables-only")
    assert r.returncode == 0, r.stderr
    intro = (decks_dir / f"{mf.INTRO}.md").read_text()
    assert (
        "The floor is beaten" in intro and "09_shuffle_vector_loads-sum at $2^{20}$ (lab)" in intro
    )
    assert "| $2^{20}$ |" in (decks_dir / "09_shuffle_vector_loads.md").read_text()
    row = next(
        line
        for line in (decks_dir / "09_shuffle_vector_loads.md").read_text().splitlines()
        if line.startswith("| $2^{20}$ |")
    )
    assert row.endswith("| 0.90 |"), row


def test_tables_read_the_same_from_the_schema_as_from_the_old_layout(tmp_path):
    """The committed run predates the schema; written again as schema version 1 (what
    gpucheck writes now), every deck's tables come out the same."""
    sys.path.insert(0, str(REPO))
    from grader.infra import evidence

    run = evidence.load(mf.DEFAULT_JSON, evidence.GpuCheck)
    new = tmp_path / "gpucheck.json"
    evidence.dump(run, new)
    assert json.loads(new.read_text())["schema_version"] == evidence.SCHEMA_VERSION
    shutil.copy(mf.DEFAULT_JSON.parent / "profile.json", tmp_path / "profile.json")
    decks_dir = tmp_path / "decks"
    decks_dir.mkdir()
    for stem in DECKS:
        shutil.copy(deck(stem), decks_dir)
    r = run_make_figures(str(new), "--decks-dir", str(decks_dir), "--tables-only")
    assert r.returncode == 0, r.stderr
    rel_json = str(mf.DEFAULT_JSON.relative_to(REPO))
    for stem in DECKS:  # the provenance names the file read; nothing else moves
        got = (decks_dir / f"{stem}.md").read_text().replace(str(new), rel_json)
        assert got == deck(stem).read_text(), stem


def test_a_run_of_an_unknown_schema_version_is_refused(tmp_path):
    data = json.loads(mf.DEFAULT_JSON.read_text())
    data["schema_version"] = 99
    run = tmp_path / "gpucheck.json"
    run.write_text(json.dumps(data))
    r = run_make_figures(str(run), "--check")
    assert r.returncode == 2 and "schema_version 99 is unknown" in r.stderr, r.stderr


def test_figures_regenerate(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed: figures not redrawn")
    decks_dir = tmp_path / "decks"
    decks_dir.mkdir()
    for stem in DECKS:
        shutil.copy(deck(stem), decks_dir)
    r = run_make_figures("--decks-dir", str(decks_dir))
    assert r.returncode == 0, r.stderr
    for stem in DECKS:
        assert (decks_dir / f"{stem}.md").read_text() == deck(stem).read_text(), (
            f"{stem}: the committed tables are stale"
        )
        for f in mf.figures_named(deck(stem).read_text()):
            out = decks_dir / f
            assert out.is_file(), f"{stem}: {f} was not generated"
            assert out.stat().st_size < 200_000, f"{f}: {out.stat().st_size} bytes"


def test_decks_build(tmp_path):
    missing = build.missing_tools()
    if missing:
        pytest.skip("cannot build PDFs here: " + "; ".join(missing))
    # --check: no text or table off a frame (overfull boxes in the kept LaTeX
    # logs), no raw caret in the PDF's text (pdftotext, when installed).
    r = subprocess.run(
        [
            sys.executable,
            str(SLIDES / "build.py"),
            "--no-figures",
            "--check",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    for stem in DECKS:
        pdf = tmp_path / f"{stem}.pdf"
        assert pdf.is_file() and pdf.stat().st_size > 10_000, f"{stem}: no PDF"
        assert (tmp_path / f"{stem}.log").is_file(), f"{stem}: the LaTeX log was not kept"


def test_pdf_check_sees_a_caret_and_an_overfull_box(tmp_path):
    (tmp_path / "x.log").write_text(
        "Overfull \\hbox (42.1pt too wide) in paragraph at lines 3--4\n"
        "Overfull \\hbox (0.5pt too wide) in alignment\n"
    )
    problems = build.check_pdf(tmp_path, "x")
    assert len([p for p in problems if "42.1pt" in p]) == 1
    assert not any("0.5pt" in p for p in problems)


FENCE_RE = re.compile(r"^```[a-z+]*\n(.*?)^```", re.S | re.M)


def solution_statements(lab_id: str) -> set[str]:
    return fence_statements.solution_statements(lab_id, REPO / "solutions")


@pytest.mark.parametrize("stem", LAB_IDS)
def test_deck_shows_no_statement_of_the_graded_fence(stem):
    if not (REPO / "solutions").is_dir():
        pytest.skip("no solutions/ here (a student release)")
    graded = solution_statements(stem)
    shown = {
        fence_statements.squash(line)
        for block in FENCE_RE.findall(deck(stem).read_text())
        for line in block.splitlines()
    }
    shared = sorted(graded & shown)
    assert not shared, (
        f"slides/{stem}.md shows code of the graded fence: {shared[:4]}; "
        f"keep it in solutions/{stem}/walkthrough.md"
    )


@pytest.mark.parametrize("stem", LAB_IDS)
def test_walkthrough_shows_the_solution_as_it_is(stem):
    """The walkthrough's code is the solution's: every statement of its code blocks
    that looks like the fence's is in the fence (it cannot drift unnoticed)."""
    path = REPO / "solutions" / stem / "walkthrough.md"
    if not path.exists():
        pytest.skip(f"no {path.relative_to(REPO)}")
    graded = solution_statements(stem)
    text = path.read_text()
    blocks = FENCE_RE.findall(text)
    assert blocks, f"{path} has no code block"
    shown = {fence_statements.squash(line) for b in blocks for line in b.splitlines()}
    assert graded & shown, f"{path} shows none of the solution's statements"


if __name__ == "__main__":  # python3 slides/test_slides.py runs them too
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
