"""The fenced student regions of a lab file:

    // ---- your code here (name) ----
    ...the student's code...
    // ---- end ----

A student's fence is pasted into the instructor's file, so it must be a block:
code that stays where it is put. `validate` checks that, `extract` records its
findings on every fence, and `transplant_checked` pastes only the fences that
pass (the skeleton's code stays in the others, with a note saying why).
"""
from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import NamedTuple

BEGIN = re.compile(r"^\s*// ---- your code here \((?P<name>[^)]+)\) ----\s*$")
END = re.compile(r"^\s*// ---- end ----\s*$")


class FenceError(ValueError):
    pass


@dataclass(frozen=True)
class Fence:
    name: str
    body: str          # the lines between the markers
    first_line: int    # 1-based line number of the first body line
    problems: tuple[str, ...] = ()   # what `validate` found; empty: safe to transplant


def extract(text: str, where: str = "file") -> list[Fence]:
    """The fences of a file, each with the problems `validate` finds in it.

    Broken markers and a fence name used twice are errors of the whole file
    (FenceError): which of two bodies is meant cannot be guessed."""
    fences: list[Fence] = []
    seen: dict[str, int] = {}
    name: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if (m := BEGIN.match(line)) is not None:
            if name is not None:
                raise FenceError(f"{where}:{number}: fence {m['name']} opens inside fence {name}")
            if m["name"] in seen:
                raise FenceError(f"{where}:{number}: fence {m['name']} appears twice (first on "
                                 f"line {seen[m['name']]}); keep one")
            name, start, body = m["name"], number + 1, []
            seen[name] = number
        elif END.match(line):
            if name is None:
                raise FenceError(f"{where}:{number}: '---- end ----' without an open fence")
            text_of_body = "".join(body)
            fences.append(Fence(name, text_of_body, start, tuple(validate(text_of_body, start))))
            name = None
        elif name is not None:
            body.append(line)
    if name is not None:
        raise FenceError(f"{where}: fence {name} is never closed")
    return fences


def outside(text: str) -> str:
    """The file with every fence body removed: what the student must not change."""
    kept, inside = [], False
    for line in text.splitlines(keepends=True):
        if BEGIN.match(line):
            inside = True
            kept.append(line)
        elif END.match(line):
            inside = False
            kept.append(line)
        elif not inside:
            kept.append(line)
    return "".join(kept)


def transplant_checked(student: str, harness: str, where: str = "file") -> tuple[str, list[str]]:
    """The harness file with each fence body replaced by the student's, by fence name,
    and notes for the student.

    A student fence that fails `validate` is not used: the harness's body stays
    there and a note names the fence and its problems. Fences of the student's
    that the harness lacks are ignored. Raises FenceError when either file's
    markers are broken or name a fence twice."""
    ours = {f.name for f in extract(harness, f"{where} (instructor's copy)")}
    theirs: dict[str, str] = {}
    notes: list[str] = []
    for fence in extract(student, where):
        if fence.name not in ours:
            continue
        if fence.problems:
            notes.append(f"{where}: fence {fence.name} was not used, the skeleton's code is graded "
                         f"there instead: {'; '.join(fence.problems)}")
        else:
            theirs[fence.name] = fence.body
    return _paste(theirs, harness), notes


def transplant(student: str, harness: str, where: str = "file") -> str:
    """`transplant_checked` without its notes.

    The choice made: `transplant` keeps its old signature (it returns the text)
    for old callers, and `transplant_checked` is the new function that also
    returns the notes. Both are equally strict: an invalid fence is not pasted."""
    return transplant_checked(student, harness, where)[0]


def _paste(bodies: dict[str, str], harness: str) -> str:
    out, inside = [], None
    for line in harness.splitlines(keepends=True):
        if (m := BEGIN.match(line)) is not None:
            inside = m["name"]
            out.append(line)
            if inside in bodies:
                out.append(bodies[inside])
        elif END.match(line):
            inside = None  # a fence the student lost or broke keeps the harness's TODO
            out.append(line)
        elif inside is None or inside not in bodies:
            out.append(line)
    return "".join(out)


# ---------------------------------------------------------------------------
# validate: is a fence body a block?
#
# The body is lexed the way the C preprocessor does (translation phases 1 to 3:
# trigraphs, backslash-newline splices, comments and literals), because what
# matters is what the compiler sees, not what the text looks like. Where
# compilers differ (a lone CR, a backslash followed by spaces, trigraphs), the
# body is lexed every way that applies, and a problem in any reading counts.
# ---------------------------------------------------------------------------

# Real fences hold hundreds of tokens; the bound keeps a hostile one cheap to check.
MAX_TOKENS = 100_000

# Directives that move code or data out of the function, read files, or build
# directive names that the check cannot see (macros). Inline PTX such as
# "ld.global.nc.v4.s32" never matches: there the dot follows a letter.
_ASM_DIRECTIVES = ("section", "pushsection", "popsection", "previous", "subsection", "sect",
                   "text", "data", "bss", "init_array", "fini_array", "preinit_array", "ctors",
                   "dtors", "incbin", "include", "macro", "irp", "irpc", "rept", "altmacro",
                   "purgem", "globl", "global", "weak", "weakref", "symver")
_ASM_DIRECTIVE = re.compile(r"(?<![\w$.])\.(%s)(?![\w$])" % "|".join(_ASM_DIRECTIVES),
                            re.IGNORECASE)
_ASM_KEYWORDS = frozenset({"asm", "__asm", "__asm__"})
_ASM_QUALIFIERS = frozenset({"volatile", "__volatile", "__volatile__", "goto", "inline",
                             "__inline", "__inline__"})
# Attributes that place a block-scope static where the loader runs it, or bind
# a symbol over the instructor's.
_BAD_ATTRIBUTES = frozenset(itertools.chain.from_iterable(
    (a, f"__{a}__") for a in ("section", "constructor", "destructor", "init_priority", "alias",
                              "ifunc", "weak", "weakref", "visibility", "symver")))
_ATTRIBUTE_KEYWORDS = frozenset({"__attribute__", "__attribute", "__declspec"})
_PRAGMA_OPERATORS = frozenset({"_Pragma", "__pragma"})

# Characters that Python's splitlines() breaks lines at but the compiler does
# not (or that no source needs): they would let the grader and the compiler
# disagree about where a fence ends.
_ODD_CHARACTER = re.compile("[\x00-\x08\x0e-\x1f\x7f\x85\u2028\u2029]")

_PUNCTUATORS = sorted("""%:%: ... <=> <<= >>= ->* :: .* -> ++ -- << >> <= >= == != && || += -= *=
    /= %= &= |= ^= ## <: :> <% %> %:""".split(), key=len, reverse=True)
_DIGRAPHS = {"<%": "{", "%>": "}", "<:": "[", ":>": "]", "%:": "#", "%:%:": "##"}
_OPENERS = {"{": "}", "(": ")", "[": "]"}
_CLOSERS = {"}": "{", ")": "(", "]": "["}
_RAW_PREFIXES = frozenset({"R", "u8R", "uR", "UR", "LR"})
_LITERAL_PREFIXES = frozenset({"u8", "u", "U", "L"})
_RAW_OPENING = re.compile(r"([^ ()\\\t\v\f\n\r]{0,16})\(")
_TRIGRAPHS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{", ">": "}",
              "-": "~"}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]+)|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|"
                     r"([\s\S]))")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
                   "e": "\x1b"}


@dataclass(frozen=True)
class _Dialect:
    trigraphs: bool     # ISO modes before C++17 replace ??= with # (and ??/ with \)
    lax_splice: bool    # GCC and Clang splice a backslash followed by spaces, then a newline
    cr_newline: bool    # a lone carriage return ends a line (GCC) or is whitespace


class _Token(NamedTuple):
    kind: str       # "id", "number", "string", "char", "punct"
    text: str       # as spelled (after splicing)
    norm: str       # punctuators: digraphs spelled plainly; literals: their decoded value
    at: int         # offset in the body (problems are reported by it)
    logical: int    # logical line (a directive ends with it)
    first: bool     # first token of its logical line


class _Lines:
    """Offsets in a body -> line numbers in the file, counted as extract() counts them."""

    def __init__(self, body: str, first_line: int):
        self.first_line = first_line
        self.starts = [0]
        for line in body.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, offset: int) -> int:
        return self.first_line + max(0, bisect_right(self.starts, offset) - 1)


Problem = tuple[int, str]   # (offset in the body, what is wrong)


def validate(body: str, first_line: int = 1) -> list[str]:
    """Problems that stop a fence body from being pasted into the instructor's file,
    as 'line N: ...' with N the line in the file (first_line: the body's first line).

    Empty when the body is a block: its brackets balance and never close one
    opened before the fence; it holds no preprocessor directive but
    '#pragma unroll [N]', no _Pragma, no asm that switches sections, includes
    files or defines global symbols, no attribute that places code or data
    where the loader runs it, and no comment or literal left open."""
    lines = _Lines(body, first_line)
    found = [(lines.at(at), what) for at, what in _text_problems(body)]
    for dialect in _dialects(body):
        found += [(lines.at(at), what) for at, what in _dialect_problems(body, dialect, lines)]
    unique = dict.fromkeys(sorted(found, key=lambda p: p[0]))  # by line, then as found
    return [f"line {line}: {what}" for line, what in unique]


def _text_problems(body: str) -> list[Problem]:
    problems = []
    if (m := _ODD_CHARACTER.search(body)) is not None:
        problems.append((m.start(), f"the character U+{ord(m.group()):04X} is not "
                         "allowed in a fence: use ordinary spaces and line breaks"))
    if body and not body.endswith(("\n", "\r")):
        problems.append((len(body) - 1, "the fence's last line does not end with a "
                         "line break"))
    return problems


def _dialects(body: str) -> list[_Dialect]:
    """Every reading of the body where compilers could differ; one when none applies."""
    trigraphs = [False, True] if re.search(r"\?\?[=/'()!<>\-]", body) else [False]
    lax = [True, False] if re.search(r"\\[ \t\f\v]+[\r\n]", body) else [True]
    cr = [True, False] if "\r" in body else [True]
    return [_Dialect(t, s, c) for t, s, c in itertools.product(trigraphs, lax, cr)]


def _dialect_problems(body: str, dialect: _Dialect, lines: _Lines) -> list[Problem]:
    spliced, origin, ends_spliced = _splice(body, dialect)
    tokens, problems = _lex(body, spliced, origin, dialect)
    if ends_spliced:
        problems.append((len(body) - 1, "the fence's last line ends with '\\', which "
                         "would join it to the line after the fence"))
    problems += _bracket_problems(tokens, lines)
    for check in (_directive_problems, _asm_problems, _attribute_problems):
        problems += check(tokens)
    return problems


def _splice(body: str, dialect: _Dialect) -> tuple[str, list[int], bool]:
    """Translation phases 1 and 2: the text the lexer sees, the offset in `body` of
    each of its characters, and whether the body ends with a splice."""
    newline = r"(?:\r\n|\n|\r)" if dialect.cr_newline else r"\n"
    space = (r"[ \t\f\v]*" if dialect.cr_newline else r"[ \t\f\v\r]*") if dialect.lax_splice \
        else ""
    backslash = r"(?:\\|\?\?/)" if dialect.trigraphs else r"\\"
    pattern = backslash + space + newline
    if dialect.trigraphs:
        pattern += r"|\?\?[=/'()!<>\-]"
    pieces: list[str] = []
    origin: list[int] = []
    last, ends_spliced = 0, False
    for m in re.finditer(pattern, body):
        pieces.append(body[last:m.start()])
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
    return re.compile("|".join((
        f"(?P<newline>{newline})", f"(?P<blank>[{blank}]+)", f"(?P<line_comment>//[^{eol}]*)",
        r"(?P<block_comment>/\*[\s\S]*?\*/)", r"(?P<open_comment>/\*)",
        r"(?P<id>[A-Za-z_$\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*)",
        # C++17 pp-number: digit separators (1'000) included.
        r"(?P<number>\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.$\x80-\U0010ffff])*)",
        f'(?P<string>"(?:[^"\\\\{eol}]|\\\\[\\s\\S])*")',
        f"(?P<char>'(?:[^'\\\\{eol}]|\\\\[\\s\\S])*')",
        r"""(?P<open_quote>["'])""", f"(?P<punct>{punct})")))


_LEXERS = {cr: _lexer(cr) for cr in (False, True)}


def _lex(body: str, s: str, origin: list[int],
         dialect: _Dialect) -> tuple[list[_Token], list[Problem]]:
    """Translation phase 3 over the spliced text `s`: tokens (comments dropped)
    and the lexical problems (comments and literals left open)."""
    lexer = _LEXERS[dialect.cr_newline]
    tokens: list[_Token] = []
    problems: list[Problem] = []
    logical, first = 0, True
    i, n = 0, len(s)

    def where(pos: int) -> int:  # problems are reported at offsets in the body
        return origin[min(pos, n - 1)]

    def emit(kind: str, start: int, end: int, norm: str) -> None:
        nonlocal first
        tokens.append(_Token(kind, s[start:end], norm, origin[start], logical, first))
        first = False

    while i < n:
        if len(tokens) > MAX_TOKENS:
            problems.append((where(i), f"the fence is longer than {MAX_TOKENS} tokens: no lab "
                             "needs that much code"))
            break
        kind, m = _token_at(lexer, s, i)
        end = m.end()
        if kind == "newline":
            logical, first = logical + 1, True
        elif kind == "open_comment":
            problems.append((where(i), "this /* comment is never closed: it would swallow the "
                             "instructor's code after the fence"))
            break
        elif kind == "id" and end < n and s[end] == '"' and m.group() in _RAW_PREFIXES:
            raw = _raw_string(body, s, origin, end)
            if raw is None:
                problems.append((where(i), "this raw string literal is malformed or never closed: "
                                 "it would swallow the instructor's code after the fence"))
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


def _end_of_line(s: str, i: int, dialect: _Dialect) -> int:
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
    return bisect_left(origin, end + len(closing)), body[m.end():end]


def _decode(literal: str) -> str:
    """The characters a literal's escapes stand for (\\x2e is '.'): what the assembler reads."""
    def one(m: re.Match) -> str:
        octal, hexa, u4, u8, other = m.groups()
        if other is not None:
            return _SIMPLE_ESCAPES.get(other, other)
        value = int(octal, 8) if octal else int(hexa or u4 or u8, 16)
        return chr(min(value, 0x10FFFF))
    return _ESCAPE.sub(one, literal)


def _bracket_problems(tokens: list[_Token], lines: _Lines) -> list[Problem]:
    """Brackets balance, and none closes what the fence did not open: '} int evil() {'
    balances but leaves the function."""
    stack: list[_Token] = []
    for t in tokens:
        if t.kind != "punct":
            continue
        if t.norm in _OPENERS:
            stack.append(t)
        elif t.norm in _CLOSERS:
            if not stack:
                return [(t.at, f"'{t.text}' closes a bracket opened before the fence: the code "
                         "of a fence must stay inside it")]
            opened = stack.pop()
            if opened.norm != _CLOSERS[t.norm]:
                return [(t.at, f"'{t.text}' does not match '{opened.text}' opened on line "
                         f"{lines.at(opened.at)}")]
    return [(t.at, f"'{t.text}' is never closed inside the fence") for t in stack[:1]]


def _directive_problems(tokens: list[_Token]) -> list[Problem]:
    """No preprocessor directive but '#pragma unroll [N]': a directive (an #include,
    a #define, an #endif) changes the instructor's code after the fence."""
    problems = []
    for k, t in enumerate(tokens):
        if t.kind == "id" and t.text in _PRAGMA_OPERATORS:
            problems.append((t.at, f"'{t.text}' is not allowed in a fence: it is a "
                             "preprocessor directive in disguise"))
        if t.kind != "punct" or t.norm not in ("#", "##"):
            continue
        if t.norm == "##" or not t.first:
            problems.append((t.at, f"'{t.text}' is not allowed here: outside a string, '#' may "
                             "only start '#pragma unroll'"))
            continue
        end = k + 1
        while end < len(tokens) and tokens[end].logical == t.logical:
            end += 1
        rest = [r.text for r in tokens[k + 1:end]]
        if _is_pragma_unroll(rest):
            continue
        if rest[:2] == ["pragma", "unroll"]:
            problems.append((t.at, "'#pragma unroll' must be alone on its line, with at most a "
                             "number after it"))
        else:
            shown = "#" + " ".join(rest[:2] if rest[:1] == ["pragma"] else rest[:1])
            problems.append((t.at, f"the preprocessor directive '{shown}' is not allowed in a "
                             "fence (only '#pragma unroll' is): a directive changes the "
                             "instructor's code after the fence"))
    return problems


def _is_pragma_unroll(words: list[str]) -> bool:
    return words[:2] == ["pragma", "unroll"] and (
        len(words) == 2 or (len(words) == 3 and re.fullmatch(r"[0-9]+", words[2]) is not None))


def _is(t: _Token, punct: str) -> bool:
    return t.kind == "punct" and t.norm == punct


def _partners(tokens: list[_Token]) -> list[int]:
    """For each opening bracket, the index of the bracket that closes it (len(tokens)
    when none does). One pass, so that hostile nesting costs linear time."""
    partner = [len(tokens)] * len(tokens)
    stack: list[int] = []
    for i, t in enumerate(tokens):
        if t.kind != "punct":
            continue
        if t.norm in _OPENERS:
            stack.append(i)
        elif t.norm in _CLOSERS and stack and tokens[stack[-1]].norm == _CLOSERS[t.norm]:
            partner[stack.pop()] = i
    return partner


def _covered(count: int, spans: list[tuple[int, int]]) -> list[bool]:
    """Which of `count` tokens lie in at least one of the half-open spans."""
    depth = [0] * (count + 1)
    for start, end in spans:
        depth[start] += 1
        depth[end] -= 1
    covered, running = [], 0
    for d in depth[:count]:
        running += d
        covered.append(running > 0)
    return covered


def _asm_problems(tokens: list[_Token]) -> list[Problem]:
    """asm may hold instructions (inline PTX, a syscall), not assembler directives
    that put code or data in another section (.init_array runs at load time),
    read a file into the program (.incbin), or define global symbols."""
    problems: list[Problem] = []
    partner = _partners(tokens)
    spans: list[tuple[int, int]] = []
    in_template: set[int] = set()
    for k, t in enumerate(tokens):
        if t.kind != "id" or t.text not in _ASM_KEYWORDS:
            continue
        j = k + 1
        while j < len(tokens) and tokens[j].kind == "id" and tokens[j].text in _ASM_QUALIFIERS:
            j += 1
        if j >= len(tokens) or not _is(tokens[j], "("):
            problems.append((t.at, f"'{t.text}' must be followed by '(' and a string"))
            continue
        # The template must be literal text: a constant expression (GCC 15's
        # asm((expr))) could spell a directive that no check sees.
        end = j + 1
        while end < partner[j] and tokens[end].kind == "string":
            end += 1
        if end == j + 1:
            problems.append((t.at, f"the template of '{t.text}' must be a string literal"))
            continue
        in_template.update(range(j + 1, end))
        problems += _directive_in(t.at, "".join(x.norm for x in tokens[j + 1:end]))
        spans.append((end, partner[j]))
    # The operands' strings too: only constraints belong there.
    for i, inside in enumerate(_covered(len(tokens), spans)):
        if inside and tokens[i].kind == "string" and i not in in_template:
            problems += _directive_in(tokens[i].at, tokens[i].norm)
    return problems


def _directive_in(at: int, text: str) -> list[Problem]:
    if (m := _ASM_DIRECTIVE.search(text)) is None:
        return []
    return [(at, f"the assembler directive '{m.group()}' is not allowed in a fence: it can put "
             "code or files into the program outside the fence")]


def _attribute_problems(tokens: list[_Token]) -> list[Problem]:
    """No attribute that puts a block-scope static into a section the loader runs
    (section(".init_array")) or binds a symbol over the instructor's."""
    partner = _partners(tokens)
    spans = []
    for k, t in enumerate(tokens[:-1]):
        opens = _is(tokens[k + 1], "(") if t.kind == "id" and t.text in _ATTRIBUTE_KEYWORDS \
            else _is(t, "[") and _is(tokens[k + 1], "[")   # [[gnu::section(...)]]
        if opens:
            spans.append((k + 2, partner[k + 1]))
    return [(t.at, f"the attribute '{t.text}' is not allowed in a fence: it can place code "
             "outside the fence")
            for t, inside in zip(tokens, _covered(len(tokens), spans))
            if inside and t.kind == "id" and t.text in _BAD_ATTRIBUTES]
