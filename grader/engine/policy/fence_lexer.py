"""C++ tokens of a fence body as the compiler would see them: line splices,
trigraphs (pre-C++17 dialects), digraphs, raw strings, comments and literal
prefixes, with the offset of each token for the problems reported on it."""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import NamedTuple

# Real fences hold hundreds of tokens; the bound keeps a hostile one cheap to check.
MAX_TOKENS = 100_000
_PUNCTUATORS = sorted(
    """%:%: ... <=> <<= >>= ->* :: .* -> ++ -- << >> <= >= == != && || += -= *=
    /= %= &= |= ^= ## <: :> <% %> %:""".split(),
    key=len,
    reverse=True,
)
_DIGRAPHS = {"<%": "{", "%>": "}", "<:": "[", ":>": "]", "%:": "#", "%:%:": "##"}
_RAW_PREFIXES = frozenset({"R", "u8R", "uR", "UR", "LR"})
_LITERAL_PREFIXES = frozenset({"u8", "u", "U", "L"})
_RAW_OPENING = re.compile(r"([^ ()\\\t\v\f\n\r]{0,16})\(")
_TRIGRAPHS = {
    "=": "#",
    "/": "\\",
    "'": "^",
    "(": "[",
    ")": "]",
    "!": "|",
    "<": "{",
    ">": "}",
    "-": "~",
}
_ESCAPE = re.compile(
    r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]+)|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|"
    r"([\s\S]))"
)
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "e": "\x1b",
}


@dataclass(frozen=True)
class Dialect:
    trigraphs: bool  # ISO modes before C++17 replace ??= with # (and ??/ with \)
    lax_splice: bool  # GCC and Clang splice a backslash followed by spaces, then a newline
    cr_newline: bool  # a lone carriage return ends a line (GCC) or is whitespace


class Token(NamedTuple):
    kind: str  # "id", "number", "string", "char", "punct"
    text: str  # as spelled (after splicing)
    norm: str  # punctuators: digraphs spelled plainly; literals: their decoded value
    at: int  # offset in the body (problems are reported by it)
    logical: int  # logical line (a directive ends with it)
    first: bool  # first token of its logical line


class Lines:
    """Offsets in a body -> line numbers in the file, counted as extract() counts them."""

    def __init__(self, body: str, first_line: int):
        self.first_line = first_line
        self.starts = [0]
        for line in body.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, offset: int) -> int:
        return self.first_line + max(0, bisect_right(self.starts, offset) - 1)


Problem = tuple[int, str]  # (offset in the body, what is wrong)


def dialects(body: str) -> list[Dialect]:
    """Every reading of the body where compilers could differ; one when none applies."""
    trigraphs = [False, True] if re.search(r"\?\?[=/'()!<>\-]", body) else [False]
    lax = [True, False] if re.search(r"\\[ \t\f\v]+[\r\n]", body) else [True]
    cr = [True, False] if "\r" in body else [True]
    return [Dialect(t, s, c) for t, s, c in itertools.product(trigraphs, lax, cr)]


def splice(body: str, dialect: Dialect) -> tuple[str, list[int], bool]:
    """Translation phases 1 and 2: the text the lexer sees, the offset in `body` of
    each of its characters, and whether the body ends with a splice."""
    newline = r"(?:\r\n|\n|\r)" if dialect.cr_newline else r"\n"
    space = (r"[ \t\f\v]*" if dialect.cr_newline else r"[ \t\f\v\r]*") if dialect.lax_splice else ""
    backslash = r"(?:\\|\?\?/)" if dialect.trigraphs else r"\\"
    pattern = backslash + space + newline
    if dialect.trigraphs:
        pattern += r"|\?\?[=/'()!<>\-]"
    pieces: list[str] = []
    origin: list[int] = []
    last, ends_spliced = 0, False
    for m in re.finditer(pattern, body):
        pieces.append(body[last : m.start()])
        origin.extend(range(last, m.start()))
        if m.group().startswith("??") and len(m.group()) == 3:
            pieces.append(_TRIGRAPHS[m.group()[2]])
            origin.append(m.start())
        ends_spliced = m.end() == len(body) and m.group()[-1] in "\r\n"  # not a trigraph
        last = m.end()
    pieces.append(body[last:])
    origin.extend(range(last, len(body)))
    return "".join(pieces), origin, ends_spliced


def _lexer(cr_newline: bool) -> re.Pattern[str]:
    """One pattern for translation phase 3, longest match first where it matters."""
    newline, blank = (r"\n|\r", r" \t\f\v") if cr_newline else (r"\n", r" \t\f\v\r")
    eol = r"\n\r" if cr_newline else r"\n"
    # C++11: "<::" is "<" "::" unless ':' or '>' follows (so vector<::std::string> works).
    punct = r"<(?=::[^:>])|" + "|".join(re.escape(p) for p in _PUNCTUATORS) + r"|[\s\S]"
    return re.compile(
        "|".join(
            (
                f"(?P<newline>{newline})",
                f"(?P<blank>[{blank}]+)",
                f"(?P<line_comment>//[^{eol}]*)",
                r"(?P<block_comment>/\*[\s\S]*?\*/)",
                r"(?P<open_comment>/\*)",
                r"(?P<id>[A-Za-z_$\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*)",
                # C++17 pp-number: digit separators (1'000) included.
                r"(?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.$\x80-\U0010ffff])*)",
                f'(?P<string>"(?:[^"\\\\{eol}]|\\\\[\\s\\S])*")',
                f"(?P<char>'(?:[^'\\\\{eol}]|\\\\[\\s\\S])*')",
                r"""(?P<open_quote>["'])""",
                f"(?P<punct>{punct})",
            )
        )
    )


_LEXERS = {cr: _lexer(cr) for cr in (False, True)}


def lex(
    body: str, s: str, origin: list[int], dialect: Dialect
) -> tuple[list[Token], list[Problem]]:
    """Translation phase 3 over the spliced text `s`: tokens (comments dropped)
    and the lexical problems (comments and literals left open)."""
    lexer = _LEXERS[dialect.cr_newline]
    tokens: list[Token] = []
    problems: list[Problem] = []
    logical, first = 0, True
    i, n = 0, len(s)

    def where(pos: int) -> int:  # problems are reported at offsets in the body
        return origin[min(pos, n - 1)]

    def emit(kind: str, start: int, end: int, norm: str) -> None:
        nonlocal first
        tokens.append(Token(kind, s[start:end], norm, origin[start], logical, first))
        first = False

    while i < n:
        if len(tokens) > MAX_TOKENS:
            problems.append(
                (
                    where(i),
                    f"the fence is longer than {MAX_TOKENS} tokens: no lab needs that much code",
                )
            )
            break
        kind, m = _token_at(lexer, s, i)
        end = m.end()
        if kind == "newline":
            logical, first = logical + 1, True
        elif kind == "open_comment":
            problems.append(
                (
                    where(i),
                    "this /* comment is never closed: it would swallow the "
                    "instructor's code after the fence",
                )
            )
            break
        elif kind == "id" and end < n and s[end] == '"' and m.group() in _RAW_PREFIXES:
            raw = _raw_string(body, s, origin, end)
            if raw is None:
                problems.append(
                    (
                        where(i),
                        "this raw string literal is malformed or never closed: "
                        "it would swallow the instructor's code after the fence",
                    )
                )
                break
            end, value = raw
            emit("string", i, end, value)
        elif kind == "id" and end < n and s[end] in "\"'" and m.group() in _LITERAL_PREFIXES:
            # The literal after its prefix: u8"...", L'x'.
            quoted_kind, quoted = _token_at(lexer, s, end)
            if quoted_kind == "open_quote":
                problems.append((where(i), "this literal is not closed on its line"))
                end = _end_of_line(s, i, dialect)
            else:
                emit(quoted_kind, i, quoted.end(), _decode(quoted.group()[1:-1]))
                end = quoted.end()
        elif kind in ("string", "char"):
            emit(kind, i, end, _decode(m.group()[1:-1]))
        elif kind == "open_quote":
            problems.append((where(i), "this literal is not closed on its line"))
            end = _end_of_line(s, i, dialect)  # the rest of the line is the broken literal
        elif kind in ("id", "number", "punct"):
            emit(kind, i, end, _DIGRAPHS.get(m.group(), m.group()))
        i = end  # blanks and comments are skipped: a comment is one space
    return tokens, problems


def _token_at(lexer: re.Pattern[str], s: str, pos: int) -> tuple[str, re.Match[str]]:
    """The token at `pos` (< len(s)) and the name of its group. A lexer of
    _lexer matches at every position (punct ends with [\\s\\S], any one
    character) and every alternative is a named group, so neither is ever None."""
    m = lexer.match(s, pos)
    if m is None or m.lastgroup is None:
        raise AssertionError(f"the lexer matched no token at offset {pos}")
    return m.lastgroup, m


def _end_of_line(s: str, i: int, dialect: Dialect) -> int:
    ends = [k for k in (s.find("\n", i), s.find("\r", i) if dialect.cr_newline else -1) if k >= 0]
    return min(ends, default=len(s))


def _raw_string(body: str, s: str, origin: list[int], quote_at: int) -> tuple[int, str] | None:
    """A raw string literal R"delim(...)delim" whose opening quote is s[quote_at].

    Splices and trigraphs are undone inside raw strings, so it is read from the
    original body; returns the offset in `s` after it and its contents."""
    o = origin[quote_at]
    m = _RAW_OPENING.match(body, o + 1)
    if m is None:
        return None
    closing = ")" + m.group(1) + '"'
    end = body.find(closing, m.end())
    if end < 0:
        return None
    return bisect_left(origin, end + len(closing)), body[m.end() : end]


def _decode(literal: str) -> str:
    """The characters a literal's escapes stand for (\\x2e is '.'): what the assembler reads."""

    def one(m: re.Match) -> str:
        octal, hexa, u4, u8, other = m.groups()
        if other is not None:
            return _SIMPLE_ESCAPES.get(other, other)
        value = int(octal, 8) if octal else int(hexa or u4 or u8, 16)
        return chr(min(value, 0x10FFFF))

    return _ESCAPE.sub(one, literal)
