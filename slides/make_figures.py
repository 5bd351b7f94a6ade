#!/usr/bin/env python3
"""Figures and results tables of the slides, from one gpucheck run.

    python3 slides/make_figures.py [GPUCHECK_JSON]        figures + tables
    python3 slides/make_figures.py [GPUCHECK_JSON] --tables-only
    python3 slides/make_figures.py [GPUCHECK_JSON] --check

GPUCHECK_JSON defaults to tests/gpu_runs/h200/gpucheck.json (what
`python3 -m grader gpucheck --out DIR` writes). Point it at another GPU's run
and every measured number in the decks follows.

What it writes:
  - slides/figures/*.png: bandwidth against input size per lab with CUB beside
    it (bw_*), each lab against the copy ceiling (ceiling_*), two overview
    plots (overview_*), lab 11's accuracy by method and input (accuracy_*:
    the run's accuracy tests, and the run's sort-first study), and diagrams
    drawn from the kernels' index arithmetic (tree, parallelism, memory,
    who_*, activity_*, banks_*, shuffle, ...). The
    diagrams do not depend on the JSON.
  - in every deck (slides/NN_name.md), the text between
    `<!-- results:begin -->` and `<!-- results:end -->`, and nothing else.

--tables-only rewrites the tables without matplotlib. --check rewrites
nothing: it exits 1 if a deck's tables differ from what the JSON gives, or a
deck names a figure that does not exist. Exit 2: the JSON is missing or is not
evidence this grader reads (grader/infra/evidence: its schema_version, or a layout
from before the schema).

The parts, one job each, are in slides/deckgen/ (its __init__ lists them).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deckgen import SLIDES  # noqa: E402
from deckgen.tables import BEGIN, END, INTRO, blocks, figures_named, splice  # noqa: E402
from deckgen.view import DEFAULT_JSON, LABS_TOML, load, rel  # noqa: E402

from grader.infra.evidence import EvidenceError  # noqa: E402  (deckgen put the repo on the path)

# What slides/test_slides.py and build.py use from here.
__all__ = ["BEGIN", "DEFAULT_JSON", "END", "INTRO", "figures_named", "main"]


def deck_path(decks: Path, stem: str) -> Path:
    return decks / f"{stem}.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "json",
        nargs="?",
        type=Path,
        default=DEFAULT_JSON,
        help=f"gpucheck.json (default: {rel(DEFAULT_JSON)})",
    )
    ap.add_argument("--labs-toml", type=Path, default=LABS_TOML)
    ap.add_argument(
        "--decks-dir",
        type=Path,
        default=SLIDES,
        help="folder of the NN_name.md decks (default: slides/)",
    )
    ap.add_argument(
        "--figures-dir",
        type=Path,
        default=None,
        help="where the PNGs go (default: DECKS_DIR/figures)",
    )
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--tables-only", action="store_true", help="no figures, no matplotlib")
    mode.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a deck is stale or names a missing figure",
    )
    args = ap.parse_args(argv)
    figures_dir = args.figures_dir or args.decks_dir / "figures"

    if not args.json.is_file():
        print(f"make_figures: no such file: {args.json}", file=sys.stderr)
        return 2
    try:
        ev = load(args.json, args.labs_toml)
    except EvidenceError as e:
        print(f"make_figures: {e}", file=sys.stderr)
        return 2
    problems = []
    for stem, block in blocks(ev).items():
        path = deck_path(args.decks_dir, stem)
        if not path.exists():
            problems.append(f"{path}: missing deck")
            continue
        text = path.read_text()
        try:
            new = splice(text, block)
        except ValueError as e:
            problems.append(f"{path}: {e}")
            continue
        if args.check:
            if new != text:
                problems.append(
                    f"{path}: results tables differ from {rel(args.json)}; run "
                    f"python3 slides/make_figures.py"
                )
            for fig in figures_named(text):
                if not (path.parent / fig).is_file():
                    problems.append(f"{path}: names {fig}, which does not exist")
        elif new != text:
            path.write_text(new)
            print(f"make_figures: updated {rel(path)}")

    if not args.check and not args.tables_only:
        try:
            from deckgen.figures import Figures

            figs = Figures(figures_dir)
        except ImportError as e:
            print(
                f"make_figures: matplotlib is needed for the figures ({e}); "
                "pip install matplotlib, or use --tables-only",
                file=sys.stderr,
            )
            return 2
        figs.all(ev)
        print(f"make_figures: {len(figs.written)} figures in {rel(figures_dir)}")
        for stem in blocks(ev):
            path = deck_path(args.decks_dir, stem)
            if path.exists():
                for fig in figures_named(path.read_text()):
                    if not (path.parent / fig).is_file():
                        problems.append(f"{path}: names {fig}, which was not generated")

    for p in problems:
        print(f"make_figures: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
