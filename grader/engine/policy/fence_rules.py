"""What makes a fence body safe to paste into the instructor's file (validate):
balanced brackets that close nothing opened before the fence, no preprocessor
directive but '#pragma unroll', no asm that leaves the function, no attribute
that places code where the loader runs it, nothing left open, no warp
intrinsic whose constant mask leaves lanes out (fence_masks). Each rule is
checked under every dialect the compilers might read the body in."""

from __future__ import annotations

import itertools
import re

from .fence_lexer import Dialect, Lines, Problem, Token, dialects, lex, splice
from .fence_masks import mask_problems

# validate: is a fence body a block?
#
# The body is lexed the way the C preprocessor does (translation phases 1 to 3:
# trigraphs, backslash-newline splices, comments and literals), because what
# matters is what the compiler sees, not what the text looks like. Where
# compilers differ (a lone CR, a backslash followed by spaces, trigraphs), the
# body is lexed every way that applies, and a problem in any reading counts.

# Directives that move code or data out of the function, read files, or build
# directive names that the check cannot see (macros). Inline PTX such as
# "ld.global.nc.v4.s32" never matches: there the dot follows a letter.
_ASM_DIRECTIVES = (
    "section",
    "pushsection",
    "popsection",
    "previous",
    "subsection",
    "sect",
    "text",
    "data",
    "bss",
    "init_array",
    "fini_array",
    "preinit_array",
    "ctors",
    "dtors",
    "incbin",
    "include",
    "macro",
    "irp",
    "irpc",
    "rept",
    "altmacro",
    "purgem",
    "globl",
    "global",
    "weak",
    "weakref",
    "symver",
)
_ASM_DIRECTIVE = re.compile(
    r"(?<![\w$.])\.(%s)(?![\w$])" % "|".join(_ASM_DIRECTIVES), re.IGNORECASE
)
_ASM_KEYWORDS = frozenset({"asm", "__asm", "__asm__"})
_ASM_QUALIFIERS = frozenset(
    {"volatile", "__volatile", "__volatile__", "goto", "inline", "__inline", "__inline__"}
)
# Attributes that place a block-scope static where the loader runs it, or bind
# a symbol over the instructor's.
_BAD_ATTRIBUTES = frozenset(
    itertools.chain.from_iterable(
        (a, f"__{a}__")
        for a in (
            "section",
            "constructor",
            "destructor",
            "init_priority",
            "alias",
            "ifunc",
            "weak",
            "weakref",
            "visibility",
            "symver",
        )
    )
)
_ATTRIBUTE_KEYWORDS = frozenset({"__attribute__", "__attribute", "__declspec"})
_PRAGMA_OPERATORS = frozenset({"_Pragma", "__pragma"})
# Characters that Python's splitlines() breaks lines at but the compiler does
# not (or that no source needs): they would let the grader and the compiler
# disagree about where a fence ends.
_ODD_CHARACTER = re.compile("[\x00-\x08\x0e-\x1f\x7f\x85\u2028\u2029]")
_OPENERS = {"{": "}", "(": ")", "[": "]"}
_CLOSERS = {"}": "{", ")": "(", "]": "["}


def validate(body: str, first_line: int = 1) -> list[str]:
    """Problems that stop a fence body from being pasted into the instructor's file,
    as 'line N: ...' with N the line in the file (first_line: the body's first line).

    Empty when the body is a block: its brackets balance and never close one
    opened before the fence; it holds no preprocessor directive but
    '#pragma unroll [N]', no _Pragma, no asm that switches sections, includes
    files or defines global symbols, no attribute that places code or data
    where the loader runs it, no comment or literal left open, and no warp
    intrinsic whose constant mask leaves lanes out (fence_masks)."""
    lines = Lines(body, first_line)
    found = [(lines.at(at), what) for at, what in _text_problems(body)]
    for dialect in dialects(body):
        found += [(lines.at(at), what) for at, what in _dialect_problems(body, dialect, lines)]
    unique = dict.fromkeys(sorted(found, key=lambda p: p[0]))  # by line, then as found
    return [f"line {line}: {what}" for line, what in unique]


def _text_problems(body: str) -> list[Problem]:
    problems = []
    if (m := _ODD_CHARACTER.search(body)) is not None:
        problems.append(
            (
                m.start(),
                f"the character U+{ord(m.group()):04X} is not "
                "allowed in a fence: use ordinary spaces and line breaks",
            )
        )
    if body and not body.endswith(("\n", "\r")):
        problems.append((len(body) - 1, "the fence's last line does not end with a line break"))
    return problems


def _dialect_problems(body: str, dialect: Dialect, lines: Lines) -> list[Problem]:
    spliced, origin, ends_spliced = splice(body, dialect)
    tokens, problems = lex(body, spliced, origin, dialect)
    if ends_spliced:
        problems.append(
            (
                len(body) - 1,
                "the fence's last line ends with '\\', which "
                "would join it to the line after the fence",
            )
        )
    problems += _bracket_problems(tokens, lines)
    for check in (_directive_problems, _asm_problems, _attribute_problems, mask_problems):
        problems += check(tokens)
    return problems


def _bracket_problems(tokens: list[Token], lines: Lines) -> list[Problem]:
    """Brackets balance, and none closes what the fence did not open: '} int evil() {'
    balances but leaves the function."""
    stack: list[Token] = []
    for t in tokens:
        if t.kind != "punct":
            continue
        if t.norm in _OPENERS:
            stack.append(t)
        elif t.norm in _CLOSERS:
            if not stack:
                return [
                    (
                        t.at,
                        f"'{t.text}' closes a bracket opened before the fence: the code "
                        "of a fence must stay inside it",
                    )
                ]
            opened = stack.pop()
            if opened.norm != _CLOSERS[t.norm]:
                return [
                    (
                        t.at,
                        f"'{t.text}' does not match '{opened.text}' opened on line "
                        f"{lines.at(opened.at)}",
                    )
                ]
    return [(t.at, f"'{t.text}' is never closed inside the fence") for t in stack[:1]]


def _directive_problems(tokens: list[Token]) -> list[Problem]:
    """No preprocessor directive but '#pragma unroll [N]': a directive (an #include,
    a #define, an #endif) changes the instructor's code after the fence."""
    problems = []
    for k, t in enumerate(tokens):
        if t.kind == "id" and t.text in _PRAGMA_OPERATORS:
            problems.append(
                (
                    t.at,
                    f"'{t.text}' is not allowed in a fence: it is a "
                    "preprocessor directive in disguise",
                )
            )
        if t.kind != "punct" or t.norm not in ("#", "##"):
            continue
        if t.norm == "##" or not t.first:
            problems.append(
                (
                    t.at,
                    f"'{t.text}' is not allowed here: outside a string, '#' may "
                    "only start '#pragma unroll'",
                )
            )
            continue
        end = k + 1
        while end < len(tokens) and tokens[end].logical == t.logical:
            end += 1
        rest = [r.text for r in tokens[k + 1 : end]]
        if _is_pragma_unroll(rest):
            continue
        if rest[:2] == ["pragma", "unroll"]:
            problems.append(
                (t.at, "'#pragma unroll' must be alone on its line, with at most a number after it")
            )
        else:
            shown = "#" + " ".join(rest[:2] if rest[:1] == ["pragma"] else rest[:1])
            problems.append(
                (
                    t.at,
                    f"the preprocessor directive '{shown}' is not allowed in a "
                    "fence (only '#pragma unroll' is): a directive changes the "
                    "instructor's code after the fence",
                )
            )
    return problems


def _is_pragma_unroll(words: list[str]) -> bool:
    return words[:2] == ["pragma", "unroll"] and (
        len(words) == 2 or (len(words) == 3 and re.fullmatch(r"[0-9]+", words[2]) is not None)
    )


def _is(t: Token, punct: str) -> bool:
    return t.kind == "punct" and t.norm == punct


def _partners(tokens: list[Token]) -> list[int]:
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


def _asm_problems(tokens: list[Token]) -> list[Problem]:
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
        problems += _directive_in(t.at, "".join(x.norm for x in tokens[j + 1 : end]))
        spans.append((end, partner[j]))
    # The operands' strings too: only constraints belong there.
    for i, inside in enumerate(_covered(len(tokens), spans)):
        if inside and tokens[i].kind == "string" and i not in in_template:
            problems += _directive_in(tokens[i].at, tokens[i].norm)
    return problems


def _directive_in(at: int, text: str) -> list[Problem]:
    if (m := _ASM_DIRECTIVE.search(text)) is None:
        return []
    return [
        (
            at,
            f"the assembler directive '{m.group()}' is not allowed in a fence: it can put "
            "code or files into the program outside the fence",
        )
    ]


def _attribute_problems(tokens: list[Token]) -> list[Problem]:
    """No attribute that puts a block-scope static into a section the loader runs
    (section(".init_array")) or binds a symbol over the instructor's."""
    partner = _partners(tokens)
    spans = []
    for k, t in enumerate(tokens[:-1]):
        opens = (
            _is(tokens[k + 1], "(")
            if t.kind == "id" and t.text in _ATTRIBUTE_KEYWORDS
            else _is(t, "[") and _is(tokens[k + 1], "[")
        )  # [[gnu::section(...)]]
        if opens:
            spans.append((k + 2, partner[k + 1]))
    return [
        (
            t.at,
            f"the attribute '{t.text}' is not allowed in a fence: it can place code "
            "outside the fence",
        )
        for t, inside in zip(tokens, _covered(len(tokens), spans))
        if inside and t.kind == "id" and t.text in _BAD_ATTRIBUTES
    ]
