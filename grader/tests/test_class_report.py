"""DIR/report.html: written by every batch, self-contained, and it renders in
a real browser (headless Chromium, where CI installed it) with every link
pointing at a file the batch wrote."""

import re
import shutil
import subprocess
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest
from conftest import student_folder

from grader import labmeta
from grader.batch import orchestrator as batch, config as batch_config, class_report
from grader.results import LabResult, StudentResult

COURSE = labmeta.load()
LAB07 = COURSE.lab("07")


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.srcs, self.scripts = [], [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a":
            self.hrefs.append(a["href"])
        if tag == "img":
            self.srcs.append(a["src"])
        if tag in ("script", "link", "iframe"):
            self.scripts += 1


def a_class():
    def lab(points, fraction, status="graded", hints=()):
        return LabResult(
            lab=LAB07.id,
            title=LAB07.title,
            status=status,
            tests_passed=72 if points else 0,
            tests_failed=0 if points else 72,
            fraction=fraction,
            threshold=LAB07.threshold,
            floor=LAB07.floor,
            points_correctness=6 if points else 0,
            points_performance=max(0, points - 6),
            max_correctness=6,
            max_performance=4,
            hints=list(hints),
            reference_fraction=0.944,
        )

    return [
        StudentResult("ana", "a", "h", "c", "d", labs=[lab(10, 0.93)]),
        StudentResult("bo", "b", "h", "c", "d", labs=[lab(8, 0.6)]),
        StudentResult("ça<va>", "c", "h", "c", "d", labs=[lab(0, None, hints=["not reset"])]),
        StudentResult("dee", "d", "h", "c", "d", labs=[lab(0, None, status="build_failed")]),
        StudentResult("eve", "e", "", "c", "d", error="not graded: disk full"),
    ]


def test_the_report_holds_every_lab_and_student_and_no_outside_resource():
    page = class_report.render(a_class(), [LAB07])
    parser = Links()
    parser.feed(page)
    assert parser.scripts == 0
    assert all(s.startswith("data:image/png;base64,") for s in parser.srcs) and parser.srcs
    assert "5 submissions, 4 graded" in page and "1 not graded" in page
    assert "1 full marks, 1 partial, 2 with no points" in page
    assert "Did not compile: dee" in page and "not reset" in page
    assert "ça&lt;va&gt;" in page and "<va>" not in page  # escaped everywhere
    assert {unquote(h) for h in parser.hrefs} >= {
        f"students/{s}/feedback.md" for s in ("ana", "bo", "ça<va>", "dee", "eve")
    }


def test_every_batch_writes_the_report_and_its_links_resolve(tmp_path, offline_batch):
    specs = [
        str(student_folder(tmp_path, n, "  return 42;\n" if n == "fox" else None))
        for n in ("fox", "gil")
    ]
    messages = []
    batch.run_batch(
        specs,
        batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[]),
        progress=messages.append,
    )
    report = tmp_path / "out" / "report.html"
    assert any(f"report: {report}" in m for m in messages)
    parser = Links()
    parser.feed(report.read_text())
    assert len(parser.hrefs) == 2
    for href in parser.hrefs:
        assert (report.parent / unquote(href)).is_file(), href


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_browser() is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_the_report_renders_in_a_real_browser(tmp_path):
    out = tmp_path / "out"
    for r in a_class():
        (out / "students" / r.student).mkdir(parents=True)
        (out / "students" / r.student / "feedback.md").write_text(f"# Feedback for {r.student}\n")
    report = class_report.write(out, a_class(), [LAB07])
    base = [
        _browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        base + ["--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<h1>Class report</h1>" in dom.stdout
    assert len(re.findall(r"<img ", dom.stdout)) == 1 and "Students" in dom.stdout
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        base + [f"--screenshot={shot}", "--window-size=1200,1600", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and shot.stat().st_size > 10_000, done.stderr[-2000:]
    # The links a reader clicks open files the batch wrote.
    parser = Links()
    parser.feed(dom.stdout)
    for href in parser.hrefs:
        assert (report.parent / unquote(href)).is_file(), href
