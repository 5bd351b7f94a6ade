"""Warp intrinsics called with a constant mask that leaves lanes out.

A shuffle or vote (`__shfl_down_sync(mask, ...)`, `__ballot_sync(mask, ...)`,
...) must name in its mask every lane that executes it. A literal such as
0xffff, reached by all 32 lanes, is undefined behaviour that happens to give
the right sum on some GPUs, so the tests cannot be trusted to catch it: the
fence is refused instead. Only masks the check can compute are judged (a
number, an expression of numbers, a constant the fence declares from one); a
mask held in a variable or returned by __activemask() is the student's to get
right.
"""

from __future__ import annotations

import ast
import re

from .fence_lexer import Problem, Token
from ..hints import PARTIAL_MASK

FULL = 0xFFFFFFFF
# Tokens of a mask that is judged at all: a hostile fence stays cheap to check.
MAX_MASK_TOKENS = 64
_INTRINSIC = re.compile(
    r"__(?:shfl(?:_up|_down|_xor)?|ballot|any|all|uni|match_\w+|reduce_\w+)_sync|__syncwarp"
)
# Words of a cast around a number: `(unsigned)-1`, `static_cast<unsigned>(~0)`, `uint32_t(-1)`.
_TYPE_WORDS = frozenset(
    {"unsigned", "signed", "int", "long", "short", "char", "std", "uint32_t", "int32_t"}
    | {"uint64_t", "int64_t", "size_t", "static_cast"}
)
_OPERATORS = frozenset({"~", "-", "+", "|", "&", "^", "<<", ">>", "*", "(", ")"})
_SUFFIX = re.compile(r"[uUlLzZ]+$")
_BINARY = {
    ast.BitOr: lambda a, b: a | b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitXor: lambda a, b: a ^ b,
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.LShift: lambda a, b: a << b if 0 <= b < 64 else None,
    ast.RShift: lambda a, b: a >> b if 0 <= b < 64 else None,
}
_UNARY = {ast.Invert: lambda a: ~a, ast.USub: lambda a: -a, ast.UAdd: lambda a: a}


def mask_problems(tokens: list[Token]) -> list[Problem]:
    """Each warp intrinsic whose first argument is a constant other than all 32 lanes."""
    constants = _declared_constants(tokens)
    problems = []
    for k, t in enumerate(tokens[:-1]):
        if t.kind != "id" or not _INTRINSIC.fullmatch(t.text) or tokens[k + 1].norm != "(":
            continue
        argument = _first_argument(tokens, k + 2)
        if len(argument) == 1 and argument[0].kind == "id":
            mask = constants.get(argument[0].text)
        else:
            mask = constant(argument)
        if mask is not None and mask != FULL:
            problems.append(
                (
                    t.at,
                    f"'{t.text}' is called with the mask {mask:#x}, not all 32 lanes: {PARTIAL_MASK}",
                )
            )
    return problems


def _first_argument(tokens: list[Token], start: int) -> list[Token]:
    """Up to the first comma or closing parenthesis outside brackets; past
    MAX_MASK_TOKENS, the tokens read so far (too many to be a constant)."""
    depth, end = 0, start
    while end < min(len(tokens), start + MAX_MASK_TOKENS + 1):
        norm = tokens[end].norm if tokens[end].kind == "punct" else ""
        if depth == 0 and norm in (",", ")"):
            break
        if norm in ("(", "[", "{"):
            depth += 1
        elif norm in (")", "]", "}"):
            depth -= 1
        end += 1
    return tokens[start:end]


def _declared_constants(tokens: list[Token]) -> dict[str, int]:
    """NAME -> value of each `const`/`constexpr ... NAME = <constant>;` in the fence."""
    found: dict[str, int] = {}
    statement: list[Token] = []
    for t in tokens:
        if t.kind == "punct" and t.norm in (";", "{", "}"):
            words = [x.text for x in statement if x.kind == "id"]
            at = next((i for i, x in enumerate(statement) if x.norm == "="), None)
            if at and {"const", "constexpr"} & set(words) and statement[at - 1].kind == "id":
                value = constant(statement[at + 1 :])
                if value is not None:
                    found[statement[at - 1].text] = value
            statement = []
        else:
            statement.append(t)
    return found


def constant(argument: list[Token]) -> int | None:
    """The value of a mask made of numbers, operators and casts, as 32 bits;
    None when it names anything else (a variable, a call) or cannot be read."""
    if len(argument) > MAX_MASK_TOKENS:
        return None
    parts = []
    for t in _without_casts(argument):
        if t.kind == "number":
            value = _number(t.text)
            if value is None:
                return None
            parts.append(str(value))
        elif t.kind == "punct" and t.norm in _OPERATORS:
            parts.append(t.norm)
        else:
            return None
    if not parts:
        return None
    try:
        value = _evaluate(ast.parse(" ".join(parts), mode="eval").body)
    except (SyntaxError, RecursionError, ValueError):
        return None
    return None if value is None else value & FULL


def _without_casts(tokens: list[Token]) -> list[Token]:
    """The tokens less type words, and less `<...>` after static_cast and the
    parentheses around a C-style cast's type."""
    out: list[Token] = []
    k = 0
    while k < len(tokens):
        t = tokens[k]
        if t.kind == "id" and t.text == "static_cast" and k + 1 < len(tokens):
            close = next((j for j in range(k + 1, len(tokens)) if tokens[j].norm == ">"), None)
            if tokens[k + 1].norm == "<" and close is not None:
                k = close + 1
                continue
        if t.norm == "(":
            close = next((j for j in range(k + 1, len(tokens)) if tokens[j].norm == ")"), k)
            if close > k + 1 and all(_type_word(x) for x in tokens[k + 1 : close]):
                k = close + 1
                continue
        if not _type_word(t):
            out.append(t)
        k += 1
    return out


def _type_word(t: Token) -> bool:
    return (t.kind == "id" and t.text in _TYPE_WORDS) or t.norm == "::"


def _number(text: str) -> int | None:
    digits = _SUFFIX.sub("", text.replace("'", ""))
    try:
        if re.fullmatch(r"0[0-7]+", digits):
            return int(digits, 8)
        return int(digits, 0)
    except ValueError:
        return None  # a floating-point literal


def _evaluate(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        value = _evaluate(node.operand)
        return None if value is None else _UNARY[type(node.op)](value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if left is None or right is None or max(abs(left), abs(right)) > 1 << 64:
            return None
        return _BINARY[type(node.op)](left, right)
    return None
