"""A corpus file cut into its function definitions.

A public file holds many kernels, and a student who takes one of them takes
only a small share of the file: compared whole, the file's share in the
student's code is what counts, and padding the pasted kernel with code of
one's own lowers that share. Each sizeable function of the file, compared on
its own, holds all of its source whatever surrounds it in the copy.
"""

from __future__ import annotations

from dataclasses import dataclass

from pygments import token

from .normalise import LEXERS

# Keywords that open a brace which is not a function body.
_NOT_A_BODY = {"struct", "class", "union", "enum"}
# Scopes whose braces hold functions as if at file level.
_TRANSPARENT = {"namespace", "extern"}


@dataclass(frozen=True)
class Function:
    name: str
    first_line: int
    code: str  # the whole definition
    body_line: int
    body: str  # between its outer braces: what a student's fence holds


def functions(code: str, language: str = "cuda") -> list[Function]:
    """The outermost function definitions of code (those inside a namespace or
    an `extern "C"` block count as outermost), in order."""
    found: list[Function] = []
    scopes: list[str] = []  # per open brace: "scope" (transparent), "body" or "other"
    depth = 0  # braces open inside the current body or other block
    header: list[tuple[object, str]] = []  # tokens of the declaration so far
    start: int | None = None  # where that declaration began
    opened = 0  # where the body being read opened
    for at, kind, value in LEXERS[language].get_tokens_unprocessed(code):
        if kind in token.Comment or kind in token.Text or not value.strip():
            continue
        # Braces, semicolons and parentheses count only as punctuation ("}" in a string does not).
        mark = value if kind in token.Punctuation else ""
        if scopes and scopes[-1] != "scope":  # inside a body or another block
            if mark == "{":
                depth += 1
            elif mark == "}":
                if depth:
                    depth -= 1
                    continue
                if scopes.pop() == "body" and start is not None:
                    found.append(_function(code, start, opened, at + 1, header))
                header, start = [], None
            continue
        if mark == ";":
            header, start = [], None
        elif mark == "{":
            words = [v for k, v in _declaration(header) if k in token.Keyword or k in token.Name]
            if words[:1] and words[0] in _TRANSPARENT and _paren(header) is None:
                scopes.append("scope")
                header, start = [], None
            elif _paren(header) is not None and not _NOT_A_BODY & set(words):
                scopes.append("body")
                opened = at
            else:
                scopes.append("other")
        elif mark == "}":
            if scopes:
                scopes.pop()
            header, start = [], None
        else:
            if start is None:
                start = at
            header.append((kind, value))
    return found


def _declaration(header: list[tuple[object, str]]) -> list[tuple[object, str]]:
    """The header without its `template <...>` clauses: `template <class T>`
    declares a parameter, not a class."""
    out, depth, after_template = [], 0, False
    for kind, value in header:
        if depth:
            depth += {"<": 1, ">": -1, ">>": -2}.get(value, 0)
            depth = max(depth, 0)
        elif after_template and value == "<":
            depth, after_template = 1, False
        elif value == "template":
            after_template = True
        else:
            out.append((kind, value))
    return out


def _paren(header: list[tuple[object, str]]) -> int | None:
    """Where the declaration's first parenthesis is, if it has one."""
    return next((i for i, (k, v) in enumerate(header) if k in token.Punctuation and v == "("), None)


def _function(
    code: str, begin: int, opened: int, end: int, header: list[tuple[object, str]]
) -> Function:
    names = [v for k, v in header[: _paren(header)] if k in token.Name]
    return Function(
        names[-1] if names else "?",
        code.count("\n", 0, begin) + 1,
        code[begin:end],
        code.count("\n", 0, opened) + 1,
        code[opened + 1 : end - 1],
    )
