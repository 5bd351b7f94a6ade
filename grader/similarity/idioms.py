"""Statements that are boilerplate, and spellings that say the same thing.

A copier who pastes a kernel into a fence declares the source's names as
aliases of the lab's (`using T = int;`, `auto& g_odata = block_sums;`,
`#define g_idata in`, `const unsigned blockSize = kThreads;`) rather than
edit every use; once names are normalised away, such a line only renames and
holds none of the kernel's work, so it is dropped, on every side alike. The
same holds for the declaration of the block's shared array (static, extern,
or through a helper such as the public samples' `SharedMemory<T>()`: its
spelling is forced by where the code is pasted), and for the handle of
cooperative groups' thread block, whose barrier `cg::sync(cta)` or
`cta.sync()` is read as `__syncthreads()`.

Tokens are Pygments' (kind, value, line) lists, as normalise._tokens gives them.
"""

from __future__ import annotations

import re

from pygments import token

_DEFINE = re.compile(r"#\s*(define\s+\w+(\s+[\w:]+)?|undef\s+\w+)$")
_ALIAS_OPENERS = {"using", "typedef", "namespace"}
ASSIGNING = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}
# Tokens a declaration's type and declarator may hold before its `=`.
_DECLARATOR = {"*", "&", "&&", "::", "<", ">", ",", "const", "constexpr", "volatile", "static"}


def rewrite(found: list[list]) -> list[list]:
    """The statements' tokens as compared, boilerplate left out."""
    assigned = {
        v
        for toks in found
        if not _declaration(toks)
        for j, (k, v, _) in enumerate(toks)
        if k in token.Name
        and (
            (j + 1 < len(toks) and toks[j + 1][1] in ASSIGNING)
            or (j and toks[j - 1][1] in ("++", "--"))
        )
    }
    return [out for toks in found if (out := _rewrite(toks, assigned)) is not None]


def _rewrite(toks: list, assigned: set[str]) -> list | None:
    values = [v for _, v, _ in toks]
    if len(toks) == 1 and toks[0][0] in token.Comment.Preproc:
        return None if _DEFINE.match(values[0]) else toks
    if values[0] in _ALIAS_OPENERS or ("__shared__" in values and not {"=", "{"} & set(values)):
        return None
    if values[-1] != ";":
        return toks
    if _declaration(toks) and (
        (_renaming(toks) and toks[values.index("=") - 1][1] not in assigned) or _helper_call(values)
    ):
        return None  # a name for another, never assigned again; a handle
    return _barrier(toks)


def _declaration(toks: list) -> bool:
    """`TYPE NAME = ...;`: a type, then the declared name, then `=`."""
    values = [v for _, v, _ in toks]
    if "=" not in values:
        return False
    lhs = toks[: values.index("=")]
    return (
        len(lhs) >= 2
        and (lhs[0][0] in token.Keyword or lhs[0][0] in token.Name)  # not `*p = q;`
        and lhs[-1][0] in token.Name
        and lhs[-2][1] != "::"  # not `lab::total = q;`
        and all(k in token.Keyword or k in token.Name or v in _DECLARATOR for k, v, _ in lhs)
    )


def _renaming(toks: list) -> bool:
    """The initialiser is one name, plain or qualified: `= in;`, `= lab::kThreads;`."""
    values = [v for _, v, _ in toks]
    rhs = toks[values.index("=") + 1 : -1]
    return (
        bool(rhs)
        and all((k in token.Name) if j % 2 == 0 else v == "::" for j, (k, v, _) in enumerate(rhs))
        and len(rhs) % 2 == 1
    )


def _helper_call(values: list[str]) -> bool:
    """The initialiser calls the block's handle or a shared-memory helper with
    no arguments: `cg::this_thread_block()`, `SharedMemory<T>()`."""
    rhs = values[values.index("=") + 1 : -1]
    if rhs[-3:] == ["this_thread_block", "(", ")"]:
        return True
    return len(rhs) >= 5 and rhs[1] == "<" and rhs[-3:] == [">", "(", ")"] and "*" in values


def _barrier(toks: list) -> list:
    """`cg::sync(cta);` and `cta.sync();` as `__syncthreads();`."""
    values = [v for _, v, _ in toks]
    plain = len(values) == 6 and values[1:] == [".", "sync", "(", ")", ";"]
    grouped = len(values) == 7 and values[1:3] == ["::", "sync"] and values[3::2] == ["(", ")"]
    if not (plain or grouped) or toks[0][0] not in token.Name:
        return toks
    line = toks[0][2]
    return [
        [token.Name.Builtin, "__syncthreads", line],
        [token.Punctuation, "(", line],
        [token.Punctuation, ")", line],
        [token.Punctuation, ";", line],
    ]
