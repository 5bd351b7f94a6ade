"""Comments and docstrings state a rule and its reason, never a commit or a run.

History lives in git and the evidence behind a measured constant in
docs/decisions.md; a comment that cites a commit hash or a file under the
committed GPU runs asks its reader to dig instead of telling them why. This
scans the comments and docstrings of the grader, common/ and the test harness
(Python through tokenize and ast, C++ and CUDA through a small scanner that
skips string and character literals) for a hex token of 7 to 40 digits with
both a letter and a digit, or the runs' folder."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from grader.infra.toolchain import REPO

RUNS = "tests/" + "gpu_runs/"  # split, so that this file does not name it
# Scripts in the runs' folder that make runs are tools to run, not evidence.
RUN_SCRIPTS = re.compile(re.escape(RUNS) + r"[\w.-]+\.(?:sh|py)\b")
HEX = re.compile(r"(?<![\w.])[0-9a-f]{7,40}(?![\w])")
# Hex-looking tokens that are not commits (none yet: add one with its reason).
NOT_COMMITS: frozenset[str] = frozenset()

PY_GLOBS = ("grader/**/*.py", "common/*.py", "tests/*.py", "tests/attacks/**/*.py")
PY_GLOBS += ("tests/submissions/*.py",)
CPP_SUFFIXES = (".cu", ".cuh", ".hpp", ".cpp", ".h")
CPP_DIRS = ("common", "tests", "tests/support", "tests/allreduce", "tests/bench")
CPP_DIRS += ("tests/peers", "tests/runner")


def citations(text: str) -> list[tuple[int, str]]:
    """(line within the text, what) of each citation of a commit or a run in one
    comment's text."""
    text = RUN_SCRIPTS.sub(lambda m: " " * len(m.group(0)), text)
    found = [(m.start(), m.group(0)) for m in HEX.finditer(text) if _commit_like(m.group(0))]
    found += [(m.start(), RUNS) for m in re.finditer(re.escape(RUNS), text)]
    return [(text.count("\n", 0, at), hit) for at, hit in sorted(found)]


def _commit_like(token: str) -> bool:
    has_letter = any(c in "abcdef" for c in token)
    return has_letter and any(c.isdigit() for c in token) and token not in NOT_COMMITS


def python_comments(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring of a Python source."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    yield first.lineno, first.value.value


def cpp_comments(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each // and /* */ comment, string and character literals
    (raw strings and digit separators included) skipped."""
    i, n = 0, len(source)
    while i < n:
        c, two = source[i], source[i : i + 2]
        if two in ("//", "/*"):
            close = "\n" if two == "//" else "*/"
            end = source.find(close, i + 2)
            end = n if end < 0 else end
            yield source.count("\n", 0, i) + 1, source[i:end]
            i = end + len(close)
        elif c == "R" and source.startswith('R"', i) and not _in_word(source, i):
            delim = source[i + 2 : source.find("(", i)]
            close = source.find(")" + delim + '"', i)
            i = n if close < 0 else close + len(delim) + 2
        elif c == '"' or (c == "'" and not _in_word(source, i)):
            i += 1
            while i < n and source[i] != c and source[i] != "\n":
                i += 2 if source[i] == "\\" else 1
            i += 1
        else:
            i += 1


def _in_word(source: str, i: int) -> bool:
    """Whether source[i] follows a letter or digit (1'000, uR"x"): not a literal's start."""
    return i > 0 and (source[i - 1].isalnum() or source[i - 1] == "_")


# Vendored releases keep upstream's comments (grader/third_party/README.md).
VENDORED = "grader/third_party"


def scanned_files(root: Path) -> list[Path]:
    files = {p for g in PY_GLOBS for p in root.glob(g)}
    files = {p for p in files if not p.relative_to(root).as_posix().startswith(VENDORED + "/")}
    files |= {p for d in CPP_DIRS for p in (root / d).glob("*") if p.suffix in CPP_SUFFIXES}
    return sorted(p for p in files if p.is_file())


def findings(root: Path) -> list[str]:
    out = []
    for path in scanned_files(root):
        source = path.read_text()
        comments = python_comments if path.suffix == ".py" else cpp_comments
        for line, text in comments(source):
            for below, hit in citations(text):
                out.append(f"{path.relative_to(root)}:{line + below}: cites {hit}")
    return out


def test_no_comment_or_docstring_cites_a_commit_or_a_run():
    assert scanned_files(REPO), "nothing scanned: the globs no longer match the tree"
    found = findings(REPO)
    assert not found, (
        "state the rule and its reason, and point to docs/decisions.md for the "
        "figures:\n" + "\n".join(found)
    )


def test_a_planted_citation_fails_and_code_does_not(tmp_path):
    (tmp_path / "grader").mkdir()
    (tmp_path / "tests" / "support").mkdir(parents=True)
    (tmp_path / "grader" / "mod.py").write_text(
        '"""Measured at 3b894b2."""\n'
        'KEY = "80e6c69"  # the run: ' + RUNS + "h200/x.json\n"
        "SCRIPT = 1  # made by " + RUNS + "lab12_gpu.sh\n"
        "def f():\n"
        '    """Cut at ' + "abc1234 fails; deadbeef, 1234567 and 0x7fffff9 pass." + '"""\n'
    )
    (tmp_path / "tests" / "support" / "a.cu").write_text(
        'const char* s = "// 80e6c69 in a string";\n'
        "int n = 1'000'000;  // fine\n"
        "char q = '\"';  /* 2a0e1c1\n was the run */\n"
        'auto r = R"x(// 9be9af6)x";\n'
        "// one line\n"
        "// see " + RUNS + "h100/y.log\n"
    )
    assert findings(tmp_path) == [
        "grader/mod.py:2: cites " + RUNS,
        "grader/mod.py:1: cites 3b894b2",
        "grader/mod.py:5: cites abc1234",
        "tests/support/a.cu:3: cites 2a0e1c1",
        "tests/support/a.cu:7: cites " + RUNS,
    ]
