#!/usr/bin/env python3
"""Build the self-study decks to PDF.

    python3 slides/build.py                 figures + tables, then every deck -> slides/build/*.pdf
    python3 slides/build.py 04 09           only these decks (by number or file stem)
    python3 slides/build.py --json RUN.json figures and tables from another GPU's gpucheck run
    python3 slides/build.py --no-figures    use the committed figures and tables as they are
    python3 slides/build.py --out DIR       PDFs into DIR
    python3 slides/build.py --check         and fail on what a reader would trip on

Needs pandoc and a LaTeX with beamer (Debian/Ubuntu: apt-get install pandoc
texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended
texlive-pictures; poppler-utils for --check's caret test) and,
for the figures, matplotlib. Exit codes: 0 built, 1 a deck failed, 2 a tool
is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SLIDES = Path(__file__).resolve().parent
DECK_RE = re.compile(r"^\d\d_[A-Za-z0-9_]+\.md$")
SUBTITLE = "CUDA Reduction Labs: self-study slides"


def decks(selected: list[str] | None = None, folder: Path = SLIDES) -> list[Path]:
    found = sorted(p for p in folder.glob("*.md") if DECK_RE.match(p.name))
    if not selected:
        return found
    out = []
    for want in selected:
        hits = [p for p in found if p.stem == want or p.stem.split("_", 1)[0] == want.zfill(2)]
        if not hits:
            raise SystemExit(
                f"build.py: no deck {want!r}; the decks: " + ", ".join(p.stem for p in found)
            )
        out += hits
    return out


def missing_tools() -> list[str]:
    """What stops a build, each with how to get it; empty when all is there."""
    hint = (
        "install them with: apt-get install pandoc texlive-latex-recommended "
        "texlive-latex-extra texlive-fonts-recommended texlive-pictures poppler-utils"
    )
    missing = [
        f"{tool} not found on PATH" for tool in ("pandoc", "pdflatex") if shutil.which(tool) is None
    ]
    if not missing and shutil.which("kpsewhich"):
        for cls in ("beamer.cls",):
            r = subprocess.run(["kpsewhich", cls], capture_output=True, text=True)
            if not r.stdout.strip():
                missing.append(f"LaTeX has no {cls}")
    return [f"{m} ({hint})" for m in missing]


def split_title(text: str) -> tuple[str, str]:
    """A deck's first line, "# Title", is its title; the rest is its body, where
    "# Section" opens a section (Predict, then measure; Debrief) and "##" a slide."""
    first, _, body = text.partition("\n")
    return first.removeprefix("# ").strip(), body


def pandoc_command(deck: Path, tex: Path) -> list[str]:
    """pandoc reading the deck's body on stdin (build_one strips the title line)."""
    return [
        "pandoc",
        "-",
        "--from",
        "markdown-implicit_figures",  # images without "Figure:" captions
        "--to",
        "beamer",
        "--standalone",
        "--slide-level=2",  # "#" a section, "##" a slide
        "--columns=200",  # tables at their natural widths
        "--highlight-style",
        "tango",
        "--include-in-header",
        str(SLIDES / "preamble.tex"),
        "--resource-path",
        str(deck.parent),
        "-V",
        "aspectratio=169",
        "-V",
        "fontsize=10pt",
        "-V",
        "colortheme=dove",
        "-V",
        "fonttheme=professionalfonts",
        "-M",
        f"title={split_title(deck.read_text())[0]}",
        "-M",
        f"subtitle={SUBTITLE}",
        "-o",
        str(tex),
    ]


def build_one(deck: Path, out_dir: Path) -> tuple[Path, str | None]:
    """pandoc to LaTeX, then pdflatex twice (frame totals) in the decks' folder, so
    that OUT/NN_name.log stays for check_pdf to read."""
    tex, pdf = out_dir / f"{deck.stem}.tex", out_dir / f"{deck.stem}.pdf"
    proc = subprocess.run(
        pandoc_command(deck, tex),
        input=split_title(deck.read_text())[1],
        capture_output=True,
        text=True,
        cwd=deck.parent,
    )
    if proc.returncode != 0 or not tex.exists():
        return pdf, (proc.stderr or proc.stdout)[-4000:]
    for _ in range(2):
        proc = subprocess.run(
            [
                "pdflatex",
                "-interaction=nonstopmode",
                "-halt-on-error",
                "-output-directory",
                str(out_dir),
                str(tex),
            ],
            capture_output=True,
            text=True,
            cwd=deck.parent,
            timeout=600,
        )
        if proc.returncode != 0:
            return pdf, proc.stdout[-4000:]
    return pdf, None


# An overfull box wider than this runs visibly off the frame (beamer's own
# templates leave a few points' worth).
OVERFULL_PT = 6.0
OVERFULL_RE = re.compile(r"^Overfull \\([hv])box \(([0-9.]+)pt too (?:wide|high)\)[^\n]*", re.M)


def check_pdf(out_dir: Path, stem: str) -> list[str]:
    """What a reader of the built deck would trip on: text or tables running off
    a frame (overfull boxes in the LaTeX log) and raw carets (2^16 printed as
    a caret instead of a power, seen in the PDF's text)."""
    problems = []
    log = out_dir / f"{stem}.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    for kind, amount, line in (
        (m.group(1), float(m.group(2)), m.group(0)) for m in OVERFULL_RE.finditer(text)
    ):
        if amount > OVERFULL_PT:
            problems.append(f"{stem}: {line.strip()[:160]}")
    if shutil.which("pdftotext"):
        proc = subprocess.run(
            ["pdftotext", "-layout", str(out_dir / f"{stem}.pdf"), "-"],
            capture_output=True,
            text=True,
        )
        for n, line in enumerate(proc.stdout.splitlines(), 1):
            if "^" in line or "\u02c6" in line:
                problems.append(f"{stem}: a raw caret in the PDF's text: {line.strip()[:120]}")
    return problems


def make_figures(json_path: Path | None, decks_dir: Path) -> int:
    cmd = [sys.executable, str(SLIDES / "make_figures.py")]
    if json_path:
        cmd.append(str(json_path))
    cmd += ["--decks-dir", str(decks_dir)]
    if importlib.util.find_spec("matplotlib") is None:
        print(
            "build.py: matplotlib is missing: tables only, the committed figures stay "
            "(pip install matplotlib to redraw them)",
            file=sys.stderr,
        )
        cmd.append("--tables-only")
    return subprocess.run(cmd).returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    ap.add_argument("decks", nargs="*", help="deck numbers or stems (default: every deck)")
    ap.add_argument("--out", type=Path, default=SLIDES / "build", help="default: slides/build/")
    ap.add_argument(
        "--json",
        type=Path,
        default=None,
        help="gpucheck.json (default: tests/gpu_runs/h200/gpucheck.json)",
    )
    ap.add_argument("--no-figures", action="store_true", help="do not run make_figures.py first")
    ap.add_argument(
        "--check",
        action="store_true",
        help="after building, fail on overfull boxes and raw carets (needs "
        "pdftotext, poppler-utils, for the carets)",
    )
    ap.add_argument("--decks-dir", type=Path, default=SLIDES, help=argparse.SUPPRESS)
    ap.add_argument(
        "--list",
        action="store_true",
        help="print the deck stems, one a line, and exit (meson uses it)",
    )
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(p.stem for p in decks(args.decks, args.decks_dir)))
        return 0

    args.out = args.out.resolve()  # pandoc runs in the decks' folder
    if args.json:
        args.json = args.json.resolve()
    problems = missing_tools()
    if problems:
        for p in problems:
            print(f"build.py: {p}", file=sys.stderr)
        return 2
    chosen = decks(args.decks, args.decks_dir)
    if not args.no_figures:
        rc = make_figures(args.json, args.decks_dir)
        if rc != 0:
            print(f"build.py: make_figures.py failed (exit {rc})", file=sys.stderr)
            return 1
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    with ThreadPoolExecutor(max_workers=min(len(chosen), os.cpu_count() or 2) or 1) as pool:
        for pdf, err in pool.map(lambda d: build_one(d, args.out), chosen):
            if err:
                failed += 1
                print(f"build.py: FAILED {pdf.name}\n{err}", file=sys.stderr)
            else:
                print(f"build.py: {pdf}")
    if failed:
        print(f"build.py: {failed} of {len(chosen)} decks failed", file=sys.stderr)
        return 1
    if args.check:
        problems = [p for d in chosen for p in check_pdf(args.out, d.stem)]
        for p in problems:
            print(f"build.py: {p}", file=sys.stderr)
        if problems:
            print(f"build.py: {len(problems)} problem(s) a reader would see", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
