"""Code as the similarity check sees it: Pygments' CUDA/C++ tokens with the
disguises a copier reaches for taken away.

Comments and layout are dropped; every identifier the student could have
chosen becomes `V` (CUDA's own names stay: nobody can rename threadIdx);
strings become `S`. The code is cut into statements; those that only rename
(aliases of the source's names) or declare the block's shared array are
dropped (idioms), and within a run of
statements that do not touch each other's variables the order is made
canonical: a copier who swaps two independent declarations gets the same
text back. The result keeps, for every character, the source line it came
from, so that a match found in the normalised text is shown on the
student's own lines.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass

from pygments import lexers, token

from . import idioms

# Kept as written: the hardware's and the toolkit's names, which a copier
# cannot change and an honest student uses just as often.
_KEPT_PREFIXES = ("__", "atomic", "cuda", "CUDA_")
# Calls that order memory or threads: a statement holding one is never moved.
_BARRIER_PREFIXES = ("__sync", "__threadfence", "atomic", "cuda", "CUDA_", "printf")
_ASSIGNING = idioms.ASSIGNING


@dataclass(frozen=True)
class Statement:
    text: str  # normalised
    lines: tuple[int, int]  # first and last source line (1-based, as given by first_line)
    names: frozenset[str]  # identifiers it mentions, as written
    writes: frozenset[str]  # identifiers it declares or assigns
    movable: bool  # may trade places with an independent neighbour


@dataclass(frozen=True)
class Normalised:
    text: str
    starts: tuple[int, ...]  # offset in text where each statement begins
    lines: tuple[tuple[int, int], ...]  # each statement's source lines

    def lines_of(self, begin: int, end: int) -> set[int]:
        """The source lines behind text[begin:end]."""
        out: set[int] = set()
        k = max(0, bisect.bisect_right(self.starts, begin) - 1)
        while k < len(self.starts) and self.starts[k] < end:
            first, last = self.lines[k]
            out.update(range(first, last + 1))
            k += 1
        return out


LEXERS = {"cuda": lexers.get_lexer_by_name("cuda"), "cpp": lexers.get_lexer_by_name("cpp")}


def language_of(filename: str) -> str:
    return "cpp" if filename.endswith((".cpp", ".cc", ".hpp", ".h")) else "cuda"


def _kept(value: str, kind) -> bool:
    return (
        kind in token.Name.Builtin
        or value.startswith(_KEPT_PREFIXES)
        or value in lexers.CudaLexer.functions
    )


def _tokens(code: str, language: str, first_line: int):
    """(kind, value, line) of every token that counts, operators joined
    (Pygments gives `+=` as `+`, `=`)."""
    line = first_line
    out: list[list] = []
    for kind, value in LEXERS[language].get_tokens(code):
        here = line
        line += value.count("\n")
        if kind in token.Comment and kind not in token.Comment.Preproc:
            continue
        if kind in token.Text or kind in token.Whitespace or not value.strip():
            continue
        if kind in token.Comment.Preproc:
            value = " ".join(value.split())
            if out and out[-1][0] in token.Comment.Preproc and out[-1][2] == here:
                out[-1][1] += " " + value  # `#pragma` and `unroll` arrive apart
                continue
        if (
            kind in token.Operator
            and out
            and out[-1][0] in token.Operator
            and out[-1][2] == here
            and out[-1][1] + value in _JOINED
        ):
            out[-1][1] += value
            continue
        out.append([kind, value, here])
    return out


_JOINED = _ASSIGNING | {"==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "->", "::", "<<="}


def _shown(kind, value: str) -> str:
    if kind in token.String:
        return "S"
    if kind in token.Name and not _kept(value, kind):
        return "V"
    return value


def _statement(toks: list) -> Statement:
    # A heuristic, not a compiler: a write through a pointer (`*p = x`) goes
    # unseen. A copy and its source are ordered by the same rule, which is all
    # a similarity check needs; a wrong order costs a few fingerprints, no more.
    names = {
        v
        for j, (k, v, _) in enumerate(toks)
        if k in token.Name and not _kept(v, k) and (j == 0 or toks[j - 1][1] not in (".", "->"))
    }
    writes: set[str] = set()
    movable = (
        not any(k in token.Keyword and v in _CONTROL for k, v, _ in toks)
        and not any(k in token.Comment.Preproc for k, _, _ in toks)
        and not any(v.startswith(_BARRIER_PREFIXES) for _, v, _ in toks)
        and toks[-1][1] == ";"
    )
    for j, (kind, value, _) in enumerate(toks):
        before = toks[j - 1][1] if j else ""
        if kind in token.Name and not _kept(value, kind) and before not in (".", "->"):
            after = toks[j + 1][1] if j + 1 < len(toks) else ""
            if after in _ASSIGNING or before in ("++", "--") or after in ("[", "{", ";", ","):
                writes.add(value)  # assigned, or declared (`int x;`, `int v[4];`, `T x{..}`)
    text = "".join(_shown(k, v) for k, v, _ in toks)
    return Statement(text, (toks[0][2], toks[-1][2]), frozenset(names), frozenset(writes), movable)


_BLOCK_OPENERS = {")", "else", "do", ";", "{", "}", "try"}
_CONTROL = {
    "if",
    "else",
    "for",
    "while",
    "do",
    "switch",
    "case",
    "return",
    "break",
    "continue",
    "goto",
    "default",
}


def statements(code: str, language: str = "cuda", first_line: int = 1) -> list[Statement]:
    """The code cut after each `;` outside brackets, at each `{` and `}`, and
    around each preprocessor line; boilerplate left out (idioms.rewrite)."""
    out: list[list] = []
    current: list = []
    depth = 0
    braces: list[bool] = []  # for each open `{`: does it open a block (not an initialiser)?
    for tok in _tokens(code, language, first_line):
        kind, value, _ = tok
        if kind in token.Comment.Preproc:
            if current:
                out.append(current)
                current = []
            out.append([tok])
            continue
        previous = current[-1][1] if current else ";"
        current.append(tok)
        if value == "{":
            # `T{x}` and `= {..}` initialise: part of the statement around them.
            braces.append(depth == 0 and previous in _BLOCK_OPENERS)
            if not braces[-1]:
                depth += 1
        elif value == "}" and braces and not braces.pop():
            depth = max(0, depth - 1)
            continue
        if value in ("(", "["):
            depth += 1
        elif value in (")", "]"):
            depth = max(0, depth - 1)
        elif (value == ";" and depth == 0) or (value in ("{", "}") and depth == 0):
            out.append(current)
            current = []
    if current:
        out.append(current)
    return [_statement(toks) for toks in idioms.rewrite(out)]


def _canonical_order(run: list[Statement]) -> list[Statement]:
    """The run's statements in the order that respects every dependence and
    otherwise puts the smaller text first: the same for any order a copier
    could have produced without changing what the code does."""
    after: list[set[int]] = [set() for _ in run]
    needs = [0] * len(run)
    for j, b in enumerate(run):
        for i in range(j):
            a = run[i]
            if a.writes & b.names or b.writes & a.names:
                after[i].add(j)
                needs[j] += 1
    ready = [(s.text, i) for i, s in enumerate(run) if needs[i] == 0]
    heapq.heapify(ready)
    order: list[Statement] = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(run[i])
        for j in after[i]:
            needs[j] -= 1
            if needs[j] == 0:
                heapq.heappush(ready, (run[j].text, j))
    return order


def normalise(code: str, language: str = "cuda", first_line: int = 1) -> Normalised:
    ordered: list[Statement] = []
    run: list[Statement] = []
    for s in statements(code, language, first_line):
        if s.movable:
            run.append(s)
            continue
        ordered += _canonical_order(run) + [s]
        run = []
    ordered += _canonical_order(run)
    starts, at = [], 0
    for s in ordered:
        starts.append(at)
        at += len(s.text)
    return Normalised(
        "".join(s.text for s in ordered), tuple(starts), tuple(s.lines for s in ordered)
    )
