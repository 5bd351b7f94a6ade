#!/usr/bin/env python3
"""The similarity report of the fixtures (make_copies.py) in headless
Chromium: writes similarity.png (the flagged pairs, side by side) and
report_section.png (the class report's Similarity section) here.

usage: screenshot.py [--out DIR]

Grades play no part in the check, so each student gets an empty result
(write_student, as a batch writes it, naming the submission)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(HERE)]
import make_copies  # noqa: E402
from grader.engine.feedback import write_student  # noqa: E402
from grader.results import StudentResult  # noqa: E402
from grader.similarity import command  # noqa: E402


def batch_of_fixtures(dest: Path) -> Path:
    make_copies.make(dest)
    out = dest / "out"
    for sub in sorted((dest / "subs").iterdir()):
        write_student(out / "students", StudentResult(sub.name, str(sub), "", "", ""))
    command.run(out, [dest / "corpus"], None, None)
    return out


def browser() -> str | None:
    return next(
        (
            shutil.which(b)
            for b in ("chromium", "chromium-browser", "google-chrome")
            if shutil.which(b)
        ),
        None,
    )


def shoot(page: Path, png: Path, profile: Path, height: int = 2400) -> None:
    done = subprocess.run(
        [
            browser() or "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size=1400,{height}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0 or not png.is_file():
        raise SystemExit(f"chromium failed: {done.stderr[-2000:]}")


# The pair shown side by side: the public-style kernel, pasted and disguised every way.
PAIR = "public-all</a> and corpus file"


def excerpt(page: Path, marker: str, dest: Path) -> None:
    """page's head and the <section> holding marker, as a page of its own."""
    text = page.read_text()
    at = text.index(marker)
    start = text.rindex("<section", 0, at + len("<section"))
    end = text.index("</section>", at) + len("</section>")
    dest.write_text(text[: text.index("<h1>")] + text[start:end] + "</html>")


if __name__ == "__main__":
    dest = (
        Path(sys.argv[sys.argv.index("--out") + 1])
        if "--out" in sys.argv
        else Path(tempfile.mkdtemp(prefix="similarity-shot-"))
    )
    if browser() is None:
        raise SystemExit("no Chromium on PATH")
    out = batch_of_fixtures(dest)
    shoot(out / "similarity.html", HERE / "similarity.png", dest / "profile", 1500)
    # A section far down a page is shot from a page holding it alone.
    excerpt(out / "report.html", "<section id=similarity>", dest / "section.html")
    shoot(dest / "section.html", HERE / "report_section.png", dest / "profile", 1400)
    excerpt(out / "similarity.html", PAIR, dest / "pair.html")
    shoot(dest / "pair.html", HERE / "similarity_pair.png", dest / "profile", 1100)
    print(f"{out}: similarity.png, report_section.png, similarity_pair.png in {HERE}")
