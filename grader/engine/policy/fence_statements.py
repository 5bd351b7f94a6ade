"""The statements of a lab's graded code, and the code a text shows, compared.

No text a student receives (handouts, decks, hints, the skeletons' comments)
may state the graded code of a reference solution's fence: help comes as
ideas, pictures and steps in words, and the student writes the code. The
code a text shows is compared with the fence's statements with spaces and
comments squashed away, so that layout does not hide a copy:

- a fragment equal to a statement, or holding a whole statement, is a hit;
- a fragment of at least MIN_FRAGMENT characters and MIN_OPERATORS operators
  that is part of a statement is a hit (`index = 2*s*t` against
  `unsigned index = 2 * s * tid;`). A name (`std::size_t`, `threadIdx.x`,
  the contract's `block_sums[blockIdx.x]`) or one comparison
  (`threadIdx.x < s`) gives nothing away, and is never one.

The decks' test (slides/test_slides.py) and the release texts' test
(grader/tests/test_release_texts.py) both read the statements from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import fences

# Lines every kernel has: they give nothing away.
GENERIC = {"__syncthreads();", "}", "{", "};", "return;", "else{", "#pragmaunroll"}
MIN_STATEMENT = 10
MIN_FRAGMENT = 10
MIN_OPERATORS = 2
OPERATOR = re.compile(r"[-=+*/%<>&|^?,;]+")
SOURCE_SUFFIXES = (".cu", ".cpp", ".cuh", ".hpp", ".h")

CODE_BLOCK = re.compile(r"^\s*```[^\n`]*\n(.*?)^\s*```", re.S | re.M)
INLINE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
# In a comment: a run of code-like tokens joined by operators (`i < n ? x : 0`,
# `partial[t + s]`), prose words around it left out.
_TOKEN = r"[\w.\[\]()]+"
CODE_RUN = re.compile(rf"{_TOKEN}(?:\s*(?:[-+*/%=<>&|^?:!]+=?|,)\s*{_TOKEN})+;?")
COMMENT = re.compile(r"//([^\n]*)|/\*(.*?)\*/", re.S)


def squash(line: str) -> str:
    """A line without its // comment and without any whitespace."""
    return re.sub(r"\s+", "", re.sub(r"//.*", "", line))


def statements_of(source: str) -> set[str]:
    """The squashed statements of a file's fences, short and generic ones left out."""
    out = set()
    for fence in fences.extract(source):
        out |= {
            s
            for line in fence.body.splitlines()
            if len(s := squash(line)) >= MIN_STATEMENT and s not in GENERIC
        }
    return out


def solution_statements(lab_id: str, solutions: Path) -> set[str]:
    """The statements of every fence of a lab's reference solution."""
    out: set[str] = set()
    for path in sorted((solutions / lab_id).glob("*.c*")):
        out |= statements_of(path.read_text())
    return out


def markdown_fragments(text: str) -> list[str]:
    """The code a Markdown text shows: each line of its code blocks, then its
    inline code spans outside them."""
    lines = [line for block in CODE_BLOCK.findall(text) for line in block.splitlines()]
    prose = CODE_BLOCK.sub("", text)
    return lines + [m.group(2) for m in INLINE.finditer(prose)]


def comments(source: str) -> list[str]:
    """The comment lines of a C++/CUDA file (// and /* */), string literals aside."""
    source = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', source)
    out: list[str] = []
    for m in COMMENT.finditer(source):
        out += (m.group(1) if m.group(1) is not None else m.group(2)).splitlines()
    return out


def comment_fragments(source: str) -> list[str]:
    """The code a file's comments show: their inline code spans, the code-like
    runs of their prose, and each whole comment line (it may hold a statement)."""
    lines = comments(source)
    text = "\n".join(lines)
    spans = [m.group(2) for m in INLINE.finditer(text)]
    runs = [m.group(0) for line in lines for m in CODE_RUN.finditer(line)]
    return spans + runs + lines


def is_code(fragment: str) -> bool:
    """Code, not a name or a single comparison: MIN_OPERATORS runs of operators."""
    return len(OPERATOR.findall(fragment)) >= MIN_OPERATORS


def leaked(fragment: str, statements: set[str]) -> str | None:
    """The statement a fragment states or is part of; None when it gives none away."""
    s = squash(fragment)
    if not s or s in GENERIC:
        return None
    if s in statements:
        return s
    for st in sorted(statements):
        if st in s or (len(s) >= MIN_FRAGMENT and is_code(s) and s in st):
            return st
    return None


@dataclass(frozen=True)
class Leak:
    path: str
    fragment: str
    labs: tuple[str, ...]  # every lab whose fence holds it
    statement: str  # the first lab's statement

    def __str__(self) -> str:
        fragment = " ".join(self.fragment.split())
        return (
            f"{self.path}: `{fragment}` states the graded code of lab "
            f"{', '.join(self.labs)} (`{self.statement}`)"
        )


def leaks(path: str, fragments: list[str], statements_by_lab: dict[str, set[str]]) -> list[Leak]:
    """Every fragment of a text that states a lab's graded code, once each."""
    found, seen = [], set()
    for fragment in fragments:
        if squash(fragment) in seen:
            continue
        hits = {lab: st for lab, sts in statements_by_lab.items() if (st := leaked(fragment, sts))}
        if hits:
            seen.add(squash(fragment))
            found.append(Leak(path, fragment, tuple(hits), next(iter(hits.values()))))
    return found
