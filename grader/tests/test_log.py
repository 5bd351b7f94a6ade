"""The grader's progress and traces go through `logging` (grader/infra/log.py) and
print exactly what `print` printed: the same bytes, on standard output, in order
with what is printed beside them, each line there as soon as it is written (a
batch's lines are read live), and every `progress` parameter defaults to it."""

from __future__ import annotations

import ast
import os
import re
import select
import subprocess
import sys
from pathlib import Path

from grader.infra import log
from grader.infra.trace import trace

GRADER = Path(__file__).resolve().parents[1]
# Files whose `progress=print` defaults are the batch's, changed with it: each
# entry is the number of print defaults left, which may only go down.
PRINT_DEFAULTS = {
    # Not progress: the hint is what `grader hint` prints as its result.
    "commands/hint.py": 1,
}


def test_a_progress_line_prints_as_print_did(capsys):
    for line in ("[batch] 3/10 alice 12/14 points  ETA 0:02:10", "100% of 5 %s", ""):
        log.progress(line)
        printed = capsys.readouterr()
        print(line)
        assert printed == capsys.readouterr() and printed.err == ""


def test_a_trace_prints_with_its_time_only_while_grader_trace_is_1(monkeypatch, capsys):
    monkeypatch.delenv("GRADER_TRACE", raising=False)
    trace("w0 prepared")
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("GRADER_TRACE", "1")
    trace("w0 alice 02_interleaved: graded {}")
    out = capsys.readouterr().out
    assert re.fullmatch(r"\[trace \+[0-9]+\.[0-9] s\] w0 alice 02_interleaved: graded \{\}\n", out)


def test_lines_come_live_and_in_order_with_prints():
    # Through a pipe (as throughput.py reads a batch): the first line arrives
    # while the process still runs, and logged and printed lines keep their order.
    code = (
        "import sys; from grader.infra import log; log.install(); "
        "log.progress('[batch] one'); sys.stdin.readline(); "
        "print('table', flush=True); log.progress('[batch] two')"
    )
    env = dict(os.environ, GRADER_TRACE="0")
    env.pop("PYTHONUNBUFFERED", None)
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=GRADER.parent,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdin is not None and p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], 20)
    assert ready, "the first line did not arrive while the process ran"
    assert p.stdout.readline() == "[batch] one\n"
    out, _ = p.communicate("go\n", timeout=20)
    assert out == "table\n[batch] two\n" and p.returncode == 0


def test_install_is_once():
    assert log.install() is log.install()
    assert sum(isinstance(h, log.Stdout) for h in log.ROOT.handlers) == 1


def print_defaults(path: Path) -> int:
    """The parameters of the file's functions whose default is `print`."""
    count = 0
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            defaults = args.defaults + [d for d in args.kw_defaults if d is not None]
            count += sum(isinstance(d, ast.Name) and d.id == "print" for d in defaults)
    return count


def test_every_progress_default_goes_through_logging():
    found = {
        str(p.relative_to(GRADER)): n
        for p in sorted(GRADER.rglob("*.py"))
        if "tests" not in p.parts and "third_party" not in p.parts and (n := print_defaults(p))
    }
    over = {f: n for f, n in found.items() if n > PRINT_DEFAULTS.get(f, 0)}
    assert not over, f"default progress to log.progress (grader/infra/log.py), not print: {over}"
    fewer = {f: n for f, n in PRINT_DEFAULTS.items() if found.get(f, 0) < n}
    assert not fewer, f"fewer print defaults now: lower or remove their entries {fewer}"


def test_the_default_check_counts_a_print_default(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f(a, progress=print, *, say=print, other=len):\n    pass\n")
    assert print_defaults(f) == 2
