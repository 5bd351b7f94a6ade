"""`python3 -m grader similarity OUT` on a batch's folder: the pages it
writes, the class report's section, bad input refused with exit 2, grades
left exactly as they were, and the pages in a real browser (headless
Chromium) with every link resolving."""

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from grader import cli
from grader.batch import class_report
from grader.results import StudentResult
from grader.similarity.report_html import report_section

REPO = Path(__file__).resolve().parents[2]


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids, self.scripts = [], set(), 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a":
            self.hrefs.append(a["href"])
        if "id" in a:
            self.ids.add(a["id"])
        self.scripts += tag in ("script", "link", "iframe")


def test_the_class_report_says_how_to_run_it_before_it_is_run(tmp_path):
    text = report_section(tmp_path)
    assert "Not run for this batch" in text and "grader similarity" in text
    assert "<a " not in text  # no link to a page that is not there


def test_bad_input_is_refused_with_exit_2(tmp_path, capsys):
    assert cli.main(["similarity", str(tmp_path / "nothing")]) == 2
    assert "no students/ folder" in capsys.readouterr().err
    (tmp_path / "students").mkdir()
    assert cli.main(["similarity", str(tmp_path)]) == 2
    assert "no readable result.json" in capsys.readouterr().err
    assert cli.main(["similarity", str(tmp_path), "--threshold", "1.5"]) == 2
    assert "--threshold must be" in capsys.readouterr().err
    assert cli.main(["similarity", str(tmp_path), "--lab", "99"]) == 2


@pytest.fixture(scope="module")
def batch_out(tmp_path_factory):
    """The fixtures of tests/similarity graded as a batch leaves them: one
    result.json per student naming its submission (grades play no part)."""
    pytest.importorskip(
        "copydetect", reason="copydetect is not installed (pip install -r requirements.txt)"
    )
    sys.path.insert(0, str(REPO / "tests" / "similarity"))
    import screenshot

    dest = tmp_path_factory.mktemp("similarity-batch")
    out = screenshot.batch_of_fixtures(dest)
    return dest, out


def test_the_pages_name_every_copy_and_change_no_grade(batch_out, capsys):
    dest, out = batch_out
    before = {p: p.read_bytes() for p in out.glob("students/*/*")}
    assert cli.main(["similarity", str(out), "--corpus", str(dest / "corpus")]) == 0
    assert "nothing here changes a grade" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in out.glob("students/*/*")} == before
    page = (out / "similarity.html").read_text()
    assert "never a grade" in page and "peer-all-of-noa" in page
    assert "corpus/public/reduce_sample_style.cu" in page
    report = (out / "report.html").read_text()
    assert "<section id=similarity>" in report and "similarity.html#pair-1" in report
    parser = Links()
    parser.feed(page)
    assert parser.scripts == 0
    # Each pair's anchor exists, and the page marks matching lines on both sides.
    assert {h[1:] for h in parser.hrefs if h.startswith("#")} <= parser.ids
    assert page.count("class=hit") > 100


def _browser():
    return next(
        (
            shutil.which(b)
            for b in ("chromium", "chromium-browser", "google-chrome")
            if shutil.which(b)
        ),
        None,
    )


@pytest.mark.skipif(_browser() is None, reason="no Chromium here (.ci/run installs Debian's)")
def test_the_pages_render_in_a_real_browser_and_their_links_resolve(batch_out, tmp_path):
    _, out = batch_out
    base = [
        _browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    for name, heading in (
        ("similarity.html", "<h1>Similarity report</h1>"),
        ("report.html", "<h2>Similarity</h2>"),
    ):
        page = out / name
        dom = subprocess.run(
            base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
        )
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert heading in dom.stdout
        parser = Links()
        parser.feed(dom.stdout)
        assert parser.hrefs
        for href in parser.hrefs:
            target, _, anchor = unquote(href).partition("#")
            path = page.parent / target if target else page
            assert path.is_file(), href
            if anchor:
                assert re.search(f"id=['\"]?{anchor}['\"> ]", path.read_text()), href
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        base
        + [f"--screenshot={shot}", "--window-size=1400,1500", (out / "similarity.html").as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and shot.stat().st_size > 10_000, done.stderr[-2000:]


def test_a_batch_without_a_similarity_run_gets_the_how_to(tmp_path):
    result = StudentResult("ana", "a", "h", "c", "d")
    page = class_report.write(tmp_path, [result], []).read_text()
    assert "Not run for this batch" in page and "similarity.html" not in page
