"""The three disguises a copier reaches for, applied to a fenced body:
renaming identifiers, reformatting (comments gone or new, indentation,
brace style, spacing) and swapping independent neighbouring statements.
Written apart from grader/similarity/normalise.py, so that the check is
not measured against its own idea of a disguise."""

from __future__ import annotations

import random
import re

from pygments import lexers, token

_LEXER = lexers.get_lexer_by_name("cuda")
# The lab's signature, the harness's names and CUDA's: a copier cannot rename these.
KEEP = {
    "in",
    "n",
    "out",
    "block_sums",
    "block_maxes",
    "stream",
    "kThreads",
    "lab",
    "max_op",
    "std",
    "size_t",
    "x",
    "y",
    "z",
    "INFINITY",
    "CUDA_CHECK",
    "atomicAdd",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "__syncthreads",
    "cudaMemsetAsync",
    "workspace",
    "LAB_TODO",
    "data",
    "values",
    "count",
    "size",
    "first",
    "last",
    "result",
    "threads",
    "acc",
    "partial_sums",
    "identity",
    "kLoads",
    "sum_sequential",
    "max_op",
}
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "omega",
    "tmp",
    "idx2",
    "accum",
    "cell",
    "slot",
    "pos",
    "cur",
    "walker",
    "hop",
    "lane_id",
    "store",
    "bucket",
    "probe",
    "acc2",
    "ptr",
]


def rename(body: str, seed: int) -> str:
    rng = random.Random(seed)
    fresh = iter(rng.sample(WORDS, len(WORDS)) + [f"v{k}" for k in range(100)])
    names: dict[str, str] = {}
    out = []
    previous = ""
    for kind, value in _LEXER.get_tokens(body):
        if (
            kind in token.Name
            and kind not in token.Name.Builtin
            and value not in KEEP
            and not value.startswith(("__", "cuda", "atomic"))
            and previous not in (".", "::")
        ):
            if value not in names:
                names[value] = next(fresh)
            value = names[value]
        if value.strip():
            previous = value
        out.append(value)
    return "".join(out).rstrip("\n") + "\n"


def reformat(body: str, seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    for line in body.splitlines():
        code = re.sub(r"\s*//.*$", "", line)
        if not code.strip():
            continue
        depth = (len(code) - len(code.lstrip())) // 2
        text = code.strip()
        text = (
            re.sub(r"\s*([=+\-*/<>!]=|[+\-*/<>]|=)\s*", r"\1", text)
            if rng.random() < 0.5
            else re.sub(r"\s*(==|<=|>=|!=|\+=|-=|\*=|=)\s*", r" \1 ", text)
        )
        if text.endswith("{") and len(text) > 1 and not text.startswith("#"):
            lines.append("    " * depth + text[:-1].rstrip())
            lines.append("    " * depth + "{")
        else:
            lines.append("    " * depth + text)
        if rng.random() < 0.2:
            lines.append("")
    return "    /* my solution */\n" + "\n".join(lines) + "\n"


# Names a statement writes: `x = `, `x += `, `x[..] = `, `int x;`, `T x{`, `++x`, `x++`.
_WRITTEN = re.compile(
    r"(\w+)\s*(?:\[[^\]]*\])?\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|;|\{|\+\+|--)"
    r"|(?:\+\+|--)\s*(\w+)"
)


def _written(line: str) -> set[str]:
    return {a or b for a, b in _WRITTEN.findall(line)}


def _movable(line: str) -> bool:
    s = line.strip()
    return (
        s.endswith(";")
        and not s.startswith(("for", "if", "while", "return", "#", "}", "do"))
        and "__syncthreads" not in s
        and "atomic" not in s
        and "CUDA_CHECK" not in s
    )


def reorder(body: str) -> tuple[str, int]:
    """Swaps each pair of neighbouring one-line statements of the same
    indentation where neither names what the other declares or assigns.
    Returns the body and how many swaps it made."""
    lines = body.splitlines()
    swaps = 0
    k = 0
    while k + 1 < len(lines):
        a, b = lines[k], lines[k + 1]
        indent = lambda s: len(s) - len(s.lstrip())  # noqa: E731
        if _movable(a) and _movable(b) and indent(a) == indent(b):
            da, db = _written(a), _written(b)
            words_a, words_b = set(re.findall(r"\w+", a)), set(re.findall(r"\w+", b))
            if not (da & words_b) and not (db & words_a):
                lines[k], lines[k + 1] = b, a
                swaps += 1
                k += 2
                continue
        k += 1
    return "\n".join(lines) + "\n", swaps


def disguise(body: str, how: str, seed: int) -> tuple[str, int]:
    """how: rename, reformat, reorder or all; the body and the swaps made."""
    swaps = 0
    if how in ("reorder", "all"):
        body, swaps = reorder(body)
    if how in ("rename", "all"):
        body = rename(body, seed)
    if how in ("reformat", "all"):
        body = reformat(body, seed)
    return body, swaps
