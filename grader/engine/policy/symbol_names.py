"""Compiler-made names in a form that compares: the same code gives the same
name in the student's file and in the reference (anonymous namespaces, static
prefixes and per-run hashes made plain), and the bare function name a policy
category matches."""

from __future__ import annotations

import re

# Names the compilers make up per file or per run: the same code must give the
# same fact in the student's file and in the reference.
_MADE_UP = [
    (
        re.compile(r"\d*_GLOBAL__N__[0-9a-f]+_\d+_\w*?_[0-9a-f]{8}(?=\d|\W|$)"),
        "(anonymous namespace)",
    ),
    (re.compile(r"_GLOBAL__sub_([ID])_\S*"), r"_GLOBAL__sub_\1_"),
    (re.compile(r"__cudaRegisterLinkedBinary_\w+"), "__cudaRegisterLinkedBinary_"),
    (re.compile(r"__fatbinwrap_\w+"), "__fatbinwrap_"),
    (re.compile(r"\w*tmpxft_[0-9a-f]+_[0-9a-f]+\w*"), "tmpxft_"),
    (re.compile(r" \[clone [^\]]*\]"), ""),
]


def normalise(name: str) -> str:
    for pattern, replacement in _MADE_UP:
        name = pattern.sub(replacement, name)
    return name


_SPECIAL_PREFIXES = (
    "vtable for ",
    "typeinfo for ",
    "typeinfo name for ",
    "guard variable for ",
    "VTT for ",
    "construction vtable for ",
    "non-virtual thunk to ",
    "virtual thunk to ",
    "covariant return thunk to ",
    "TLS init function for ",
    "TLS wrapper function for ",
    "reference temporary #0 for ",
)
_ANON = "(anonymous namespace)"


def bare_name(demangled: str) -> str:
    """The qualified name without return type, template arguments or
    parameters: `int std::accumulate<int const*, int>(int const*, ...)` is
    `std::accumulate`. Patterns in policy.toml are matched against this."""
    s = demangled
    for prefix in _SPECIAL_PREFIXES:
        if s.startswith(prefix):
            s = s[len(prefix) :]
    s = s.replace(_ANON, "{anon}")
    kept = _strip_brackets(s)
    tokens = [t for t in kept.split() if t not in ("const", "volatile", "&", "&&", "noexcept")]
    if not tokens:
        return demangled
    op = next((i for i, t in enumerate(tokens) if "operator" in t), None)
    name = " ".join(tokens[op:]) if op is not None else tokens[-1]
    return name.replace("{anon}", _ANON)


def _strip_brackets(s: str) -> str:
    """Drops <...> and (...) at every depth; keeps {lambda...} and operator names."""
    out, angle, paren, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        top = angle == 0 and paren == 0
        if (
            top
            and s.startswith("operator", i)
            and (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_"))
        ):
            j = i + len("operator")
            if s.startswith("()", j):
                j += 2
            while j < len(s) and s[j] not in "(":
                j += 1
            out.append(s[i:j])
            i = j
            continue
        if c == "{" and top:
            depth, j = 0, i
            while j < len(s):
                depth += {"{": 1, "}": -1}.get(s[j], 0)
                j += 1
                if depth == 0:
                    break
            out.append(s[i:j])
            i = j
            continue
        if c == "<":
            angle += 1
        elif c == ">" and angle:
            angle -= 1
        elif c == "(":
            paren += 1
        elif c == ")" and paren:
            paren -= 1
        elif top:
            out.append(c)
        i += 1
    return "".join(out)
