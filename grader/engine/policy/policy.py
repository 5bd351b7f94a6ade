"""Policy checks on a student's lab files: no library reductions (CUB, Thrust,
std::accumulate ...), no summing on the host, nothing beside the reduction.

Two passes:

- check_strings (also `check`, for the callers that predate the second pass):
  the forbidden strings of each lab (grader/labs.toml) inside the fenced
  regions. Fast, and works on a file that does not compile, but spelling
  walks past it: a macro, an alias, `using namespace std;`, dlsym.
- check_linked: what the compiled file links and calls (grader/engine/policy/symbols.py),
  compared with the lab's skeleton and reference solution compiled the same
  way; the forbidden categories are data, in grader/engine/policy/policy.toml. Measured cost
  per student file (compile included, baselines cached) on a loaded 2-core
  machine: 0.6 to 1.0 s for lab 01, 2.5 to 3.7 s for lab 04; see
  grader/engine/policy/symbols.py.
"""

from __future__ import annotations

import re
import time
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TypedDict

from ...infra import toolchain
from ...labmeta import Lab
from . import build_facts, build_flags, facts_cache, fences, symbol_names, symbol_parse, symbols
from .symbol_parse import Fact

POLICY_TOML = Path(__file__).resolve().parent / "policy.toml"
FOUND_CAP = 200  # characters of a demangled name shown to the student


@dataclass
class Violation:
    file: str
    line: int
    found: str
    why: str
    # The check could not judge for a reason that is not the student's (the
    # instructor's files did not compile): the lab is not graded, not refused.
    fault: bool = False


# ---------------------------------------------------------------- the string pass


def _strip_comments(code: str) -> str:
    code = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def check_strings(lab: Lab, lab_dir: Path) -> list[Violation]:
    found = []
    for name in lab.files:
        path = lab_dir / name
        if not path.is_file():
            why = "a folder where a file belongs" if path.is_dir() else "the file is missing"
            found.append(Violation(name, 0, "", why))
            continue
        try:
            regions = fences.extract(path.read_text(errors="replace"), name)
        except fences.FenceError as e:
            found.append(Violation(name, 0, "", f"broken fence markers: {e}"))
            continue
        for region in regions:
            code = _strip_comments(region.body)
            for offset, line in enumerate(code.splitlines()):
                for banned in lab.forbidden:
                    if banned in line:
                        found.append(
                            Violation(name, region.first_line + offset, banned, _banned_why(banned))
                        )
    return found


def check(lab: Lab, lab_dir: Path) -> list[Violation]:
    """The string pass, under the name its first callers use."""
    return check_strings(lab, lab_dir)


def _banned_why(banned: str) -> str:
    return (
        f"'{banned}' is not allowed in this lab: the point is to write the "
        "reduction yourself, on the GPU"
    )


# ---------------------------------------------------------------- the categories


@dataclass(frozen=True)
class Category:
    name: str
    why: str
    symbols: tuple[str, ...] = ()
    device_files: tuple[str, ...] = ()
    instructions: tuple[str, ...] = ()
    startup: tuple[str, ...] = ()

    def matches(self, fact: Fact) -> bool:
        if fact.kind in _SYMBOL_KINDS:
            return any(
                fnmatchcase(name, p) for name in _names_to_match(fact.name) for p in self.symbols
            )
        patterns = {
            symbol_parse.DEVICE_FILE: self.device_files,
            symbol_parse.HOST_INSN: self.instructions,
            symbol_parse.STARTUP: self.startup,
        }.get(fact.kind, ())
        return any(fnmatchcase(fact.name, p) for p in patterns)


_SYMBOL_KINDS = (
    symbol_parse.HOST_SYMBOL,
    symbol_parse.HOST_REF,
    symbol_parse.DEVICE_SYMBOL,
    symbol_parse.DEVICE_CALL,
)
_DEVICE_RUNTIME = re.compile(r"^__cudaCDP\d+(\w+)$")


def _names_to_match(name: str) -> list[str]:
    """The bare name, and for a call into the device runtime the API it
    implements: device-side cudaMemcpyAsync compiles to __cudaCDP2MemcpyAsync."""
    bare = symbol_names.bare_name(name)
    m = _DEVICE_RUNTIME.match(bare)
    return [bare, "cuda" + m[1]] if m else [bare]


def load_categories(path: Path = POLICY_TOML) -> tuple[Category, ...]:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = []
    for name, entry in data.get("categories", {}).items():
        try:
            out.append(
                Category(
                    name=name,
                    why=entry["why"],
                    **{
                        key: tuple(entry.get(key, ()))
                        for key in ("symbols", "device_files", "instructions", "startup")
                    },
                )
            )
        except KeyError:
            raise ValueError(f"{path}: category {name} has no 'why'") from None
    return tuple(out)


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:::\w+)*(?:::)?")


def lab_categories(lab: Lab) -> tuple[Category, ...]:
    """The lab's own forbidden strings as symbol patterns, after the general
    categories (whose reasons say more). Strings that are not names (`#pragma
    omp`) stay with the string pass."""
    return tuple(
        Category(name=f"lab:{banned}", why=_banned_why(banned), symbols=(banned + "*",))
        for banned in lab.forbidden
        if _IDENTIFIER.fullmatch(banned)
    )


def categories_for(lab: Lab) -> tuple[Category, ...]:
    return load_categories() + lab_categories(lab)


def instruction_patterns(categories: tuple[Category, ...]) -> tuple[str, ...]:
    """The instructions worth recording: facts keep only these (and the cache
    is keyed by them), since every instruction of a file would be too many."""
    return tuple(sorted({p for c in categories for p in c.instructions}))


# ---------------------------------------------------------------- the linked pass


@dataclass
class LinkedCheck:
    violations: list[Violation] = field(default_factory=list)
    compiled: bool = False  # the student's file compiled (False is no violation by itself)
    log: str = ""  # compiler output when it did not compile; notes otherwise
    seconds: float = 0.0
    judged: bool = False  # facts were compared with the skeleton's or the reference's
    # Why it could not judge where that is the machine's or the grader's fault,
    # not the student's (the instructor's files did not compile, with their
    # compilers' output; what the build made could not be read).
    fault: str = ""


class _CompileOptions(TypedDict):
    """symbols.compile_facts's (and facts_cache.cached_facts's) options, the same for every file."""

    include_dirs: list[Path]
    rdc: bool
    work: Path
    timeout: float
    instructions: tuple[str, ...]
    like: build_flags.BuildCompile | None


def check_linked(
    lab: Lab,
    student_file: Path,
    *,
    skeleton_file: Path,
    reference_file: Path | None,
    include_dirs: list[Path],
    work: Path,
    timeout: float = 120,
    like: build_flags.BuildCompile | None = None,
) -> LinkedCheck:
    """Compiles student_file (the instructor's file with the student's fences
    transplanted) and reports what it links or calls that is forbidden and
    that neither the skeleton nor the reference has. timeout: seconds for
    each compile. The skeleton's and reference's facts are cached under work.
    like: the build's compile of the file (build_flags.for_file), whose
    command all three compiles then share; where it carried the check's
    additions (a GPU lab's runner: build_flags.kept_by_build), the student's
    file is not compiled again, and the build's object and PTX are read (the
    build must have run)."""
    started = time.monotonic()
    categories = categories_for(lab)
    common = compile_options(lab, categories, include_dirs, work, timeout, like)
    kept = like.kept if like is not None and like.builds(student_file) else None
    if like is not None and kept is not None:  # the build's compile was the check's: read it
        student = build_facts.kept_facts(
            like,
            kept,
            include_dirs=include_dirs,
            instructions=common["instructions"],
            timeout=timeout,
        )
    else:
        student = symbols.compile_facts(student_file, **common)
    if not student.ok and kept is not None:  # the build made it: no code of the student's
        fault = f"it could not read what the build made of this file: {student.log}"
        return LinkedCheck([], True, fault, time.monotonic() - started, False, fault)
    if not student.ok:
        fault = toolchain.tool_fault(student.log)
        return LinkedCheck([], False, student.log, time.monotonic() - started, False, fault)
    usable, notes = _baselines((skeleton_file, reference_file), common)
    if not usable:
        return _unjudged(notes, started)
    if not student.complete:
        notes.insert(0, f"not judged: the compiled file could not be read in full\n{student.log}")
        return LinkedCheck([], True, "\n".join(notes), time.monotonic() - started, False)
    known = {fact.key for b in usable for fact in b.facts}
    found = judge(student.facts, known, categories, student_file.name)
    return LinkedCheck(found, True, "\n".join(notes), time.monotonic() - started, True)


def check_built(
    lab: Lab,
    student_file: Path,
    *,
    like: build_flags.BuildCompile,
    skeleton_file: Path,
    reference_file: Path | None,
    include_dirs: list[Path],
    work: Path,
    timeout: float = 120,
) -> LinkedCheck:
    """What the build's own object of student_file (what runs) links or calls
    that is forbidden and that neither the skeleton's nor the reference's
    facts name anywhere. check_linked's compile keeps calls out of line
    (-fno-inline), so a call that only inlining makes (a parameter that
    __builtin_constant_p finds constant once its function is inlined) shows
    only here; names, not places, are compared, as inlining moves calls
    between functions, and a name any of their facts has is known. timeout:
    seconds for each baseline's compile (cached)."""
    started = time.monotonic()
    if like.kept is not None and like.builds(student_file):  # check_linked read this object
        return LinkedCheck([], True, "", 0.0, True)
    categories = categories_for(lab)
    common = compile_options(lab, categories, include_dirs, work, timeout, like)
    named = like.named if like.builds(student_file) else student_file
    built = build_facts.object_facts(like.object, named, instructions=common["instructions"])
    if not (built.ok and built.complete):
        fault = toolchain.tool_fault(built.log)
        return LinkedCheck([], built.ok, built.log, time.monotonic() - started, False, fault)
    usable, notes = _baselines((skeleton_file, reference_file), common)
    if not usable:
        return _unjudged(notes, started)
    # Startup code is the compiler's registration, which inlining reshapes:
    # check_linked judges it, on the compile that keeps it in its functions.
    known = {f.name for b in usable for f in b.facts}
    new = [
        Fact(f.kind, f.name, "", f.line)
        for f in built.facts
        if f.kind != symbol_parse.STARTUP and f.name not in known
    ]
    found = judge(new, set(), categories, student_file.name)
    return LinkedCheck(found, True, "", time.monotonic() - started, True)


def _unjudged(notes: list[str], started: float) -> LinkedCheck:
    """No verdict: neither instructor's file gave its facts (notes: why)."""
    fault = "it could not compile the instructor's files it compares this file with: " + (
        "neither the skeleton nor the reference could be compiled\n" + "\n".join(notes)
    )
    return LinkedCheck([], True, fault, time.monotonic() - started, False, fault)


def compile_options(
    lab: Lab,
    categories: tuple[Category, ...],
    include_dirs: list[Path],
    work: Path,
    timeout: float,
    like: build_flags.BuildCompile | None,
) -> _CompileOptions:
    return _CompileOptions(
        include_dirs=list(include_dirs),
        rdc=lab.rdc,
        work=work,
        timeout=timeout,
        instructions=instruction_patterns(categories),
        like=like,
    )


def _baselines(
    files: tuple[Path | None, ...], common: _CompileOptions
) -> tuple[list[symbols.Compiled], list[str]]:
    """The skeleton's and the reference's facts (cached) that can be used, and
    a note for each that cannot."""
    baselines = [facts_cache.cached_facts(f, **common) for f in files if f is not None]
    notes = [
        f"{Path(b.source).parent.name}/{Path(b.source).name} (instructor's) could not be "
        f"read:\n{b.log[-2000:]}"
        for b in baselines
        if not (b.ok and b.complete)
    ]
    return [b for b in baselines if b.ok and b.complete], notes


# What a student reads first when one thing shows as several facts.
_PREFERENCE = {
    symbol_parse.HOST_REF: 0,
    symbol_parse.DEVICE_CALL: 1,
    symbol_parse.HOST_INSN: 2,
    symbol_parse.STARTUP: 3,
    symbol_parse.DEVICE_FILE: 4,
    symbol_parse.HOST_SYMBOL: 5,
    symbol_parse.DEVICE_SYMBOL: 6,
}


def judge(
    facts: list[Fact], known: set[tuple[str, str, str]], categories: tuple[Category, ...], file: str
) -> list[Violation]:
    """Violations: facts that no instructor's file has and that a category
    forbids, one per category, thing and line. A thing is a name without its
    template arguments (all of std::reduce's overloads are one), or every
    device file of a category at once (CUB's headers are one use of CUB)."""
    groups: dict[tuple[str, str], list[tuple[Fact, Category]]] = {}
    for fact in sorted(facts, key=lambda f: (_PREFERENCE.get(f.kind, 9), f.line == 0, f.name)):
        if fact.key in known:
            continue
        category = next((c for c in categories if c.matches(fact)), None)
        if category is not None:
            groups.setdefault((category.name, _thing(fact)), []).append((fact, category))
    out = []
    for matches in groups.values():
        lined = {f.line for f, _ in matches if f.line}
        shown = set()
        for fact, category in matches:
            if (fact.line == 0 and lined) or fact.line in shown:
                continue  # the same thing is already reported with a line
            shown.add(fact.line)
            out.append(Violation(file, fact.line, _found(fact), category.why))
    return sorted(out, key=lambda v: (v.line == 0, v.line, v.found))


def _thing(fact: Fact) -> str:
    if fact.kind == symbol_parse.DEVICE_FILE:
        return "device files"
    return symbol_names.bare_name(fact.name) if fact.kind in _SYMBOL_KINDS else fact.name


def _found(fact: Fact) -> str:
    text = fact.name
    if fact.kind == symbol_parse.DEVICE_FILE:
        text = f"device code from {fact.name}"
    elif fact.kind == symbol_parse.HOST_INSN:
        text = f"instruction '{fact.name}'"
    elif fact.kind == symbol_parse.STARTUP:
        text = f"{fact.name} (run before main or at exit, from {fact.where})"
    return text if len(text) <= FOUND_CAP else text[: FOUND_CAP - 3] + "..."
