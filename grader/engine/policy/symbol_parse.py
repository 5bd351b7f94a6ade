"""Facts read from the tools' text: the symbol table (nm), the disassembly and
relocations (objdump) of host code, and the PTX of device code. Each fact is
a kind, a name, where it sits and the source line it comes from."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from .symbol_names import normalise

# Kinds of fact. `where` says where the fact sits, as noted.
HOST_SYMBOL = "host-symbol"  # where: "defined" or "undefined"
HOST_REF = "host-ref"  # a host function or data section (where) refers to name
HOST_INSN = "host-insn"  # an instruction (name) in a host function (where)
STARTUP = "startup"  # runs before main or at exit: an entry (where: its section),
# or a function such an entry calls (where: the entry)
DEVICE_FILE = "device-file"  # the PTX has code from this source file
DEVICE_SYMBOL = "device-symbol"  # where: "defined" (.entry/.func) or "extern" (.extern .func)
DEVICE_CALL = "device-call"  # a device function (where) calls name
STARTUP_SECTIONS = (".init_array", ".ctors", ".fini_array", ".dtors")
SOURCE = "<source>"  # the compiled file, in device file paths
INCLUDE = "<include>"  # an include directory, in device file paths


@dataclass(frozen=True)
class Fact:
    kind: str
    name: str  # demangled, compiler-made names normalised (see normalise)
    where: str = ""
    line: int = 0  # line of the compiled file the fact comes from; 0: unknown or elsewhere

    @property
    def key(self) -> tuple[str, str, str]:
        """What is compared with the skeleton and the reference: lines differ, facts not."""
        return (self.kind, self.name, self.where)


@dataclass(frozen=True)
class Symbol:
    name: str
    section: str
    value: int
    size: int
    is_function: bool

    @property
    def is_named(self) -> bool:
        return bool(self.name) and self.name != self.section  # a section's own symbol names nothing


_SYMBOL_LINE = re.compile(r"^([0-9a-f]+)\s(.{7})\s(\S+)\s+([0-9a-f]+)\s+(?:\.hidden\s+)?(.*)$")


def parse_symbol_table(text: str) -> list[Symbol]:
    """`objdump -t -C -w`: value, seven flag characters, section, size, name."""
    out = []
    for line in text.splitlines():
        m = _SYMBOL_LINE.match(line)
        if m is None or "d" in m[2][5:7] or "f" in m[2][6]:  # debugging and file symbols
            continue
        out.append(Symbol(m[5].strip(), m[3], int(m[1], 16), int(m[4], 16), "F" in m[2]))
    return out


@dataclass
class CodeFacts:
    facts: list[Fact]
    calls: dict[str, set[str]]  # function -> what it refers to (for the startup facts)


_FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")
_LINE_INFO = re.compile(r"^(\S.*):(\d+)(?: \(discriminator \d+\))?$")
_INSN = re.compile(r"^\s+[0-9a-f]+:\t([^\t]*)(?:\t(.*))?$")
_RELOC = re.compile(r"(R_X86_64_\w+)\s+(\S.*)$")
_LOCAL_CALL = re.compile(r"^call\w*\s+[0-9a-f]+ <(.*)>$")


def parse_disassembly(
    text: str, source: Path, instructions: tuple[str, ...], symbols: list[Symbol]
) -> CodeFacts:
    """`objdump -d -r -l -C -w`: which function refers to which symbol, and
    the instructions matching `instructions`, each with the line of source it
    comes from when that line is in the compiled file."""
    facts: list[Fact] = []
    calls: dict[str, set[str]] = {}
    function, line = "", 0
    here = str(source)
    for raw in text.splitlines():
        if (m := _FUNCTION.match(raw)) is not None:
            function, line = normalise(m[1]), 0
            continue
        if not raw.startswith((" ", "\t")) and (m := _LINE_INFO.match(raw)) is not None:
            line = int(m[2]) if m[1] == here else 0
            continue
        if (m := _INSN.match(raw)) is None:
            continue
        insn = " ".join(m[1].split("#")[0].split())
        if any(fnmatchcase(insn, p) for p in instructions):
            facts.append(Fact(HOST_INSN, insn, function, line))
        target = None
        if (r := _RELOC.search(m[2] or "")) is not None:
            target = resolve_target(r[1], r[2], symbols)
        elif (c := _LOCAL_CALL.match(insn)) is not None and not _ADDEND.search(c[1]):
            target = c[1]  # a call within the section needs no relocation
        if target:
            target = normalise(target)
            facts.append(Fact(HOST_REF, target, function, line))
            calls.setdefault(function, set()).add(target)
    return CodeFacts(facts, calls)


_RELOC_SECTION = re.compile(r"^RELOCATION RECORDS FOR \[(.*)\]:$")
_RELOC_ROW = re.compile(r"^[0-9a-f]+\s+(R_\w+)\s+(\S.*)$")
_NOT_DATA = (
    ".text",
    ".eh_frame",
    ".debug",
    ".rela",
    ".gcc_except_table",
    ".nvFatBinSegment",
    "__nv",
)


def parse_data_relocations(text: str, symbols: list[Symbol]) -> list[tuple[str, str]]:
    """`objdump -r -C -w`: (section, target) for sections that hold data, not
    code (code is read from the disassembly) nor unwinding or debugging tables."""
    out, section = [], ""
    for line in text.splitlines():
        if (m := _RELOC_SECTION.match(line)) is not None:
            section = m[1]
        elif not section.startswith(_NOT_DATA) and (m := _RELOC_ROW.match(line)) is not None:
            if (target := resolve_target(m[1], m[2], symbols)) is not None:
                out.append((section, normalise(target)))
    return out


_SECTION_TARGET = re.compile(r"(\.[^+-]*)(?:([+-])0x([0-9a-f]+))?")
_ADDEND = re.compile(r"[+-]0x[0-9a-f]+$")


def resolve_target(reloc_type: str, target: str, symbols: list[Symbol]) -> str | None:
    """The name a relocation refers to. A local function is referred to as
    section+offset: name it by the symbol table. Other section-relative
    targets (string literals, static variables) name nothing: None."""
    m = _SECTION_TARGET.fullmatch(target.strip())
    if m is None:
        return _ADDEND.sub("", target.strip())
    offset = int(m[3] or "0", 16) * (-1 if m[2] == "-" else 1)
    if "PC32" in reloc_type or "PLT32" in reloc_type or "GOTPC" in reloc_type:
        offset += 4  # PC-relative: the addend is biased by the 4 bytes of the field
    for s in symbols:
        if s.is_function and s.section == m[1] and s.value <= offset < s.value + max(s.size, 1):
            return s.name
    return None


def startup_facts(data_refs: list[tuple[str, str]], calls: dict[str, set[str]]) -> list[Fact]:
    """Code that runs before main or at exit: each entry of the startup
    sections, and what each entry calls, following the compiler's own static
    initialisation helpers one level down."""
    facts = []
    for section, entry in data_refs:
        if not section.startswith(STARTUP_SECTIONS):
            continue
        facts.append(Fact(STARTUP, entry, section))
        for callee in calls.get(entry, ()):
            facts.append(Fact(STARTUP, callee, entry))
            if callee.startswith(("__static_initialization_and_destruction", "_GLOBAL__sub_")):
                facts += [Fact(STARTUP, c, callee) for c in calls.get(callee, ())]
    return facts


_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
_PTX_FUNC = re.compile(
    r"^\s*((?:\.(?:visible|weak|extern)\s+)*)\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)
_PTX_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][\w$]*)")


def parse_ptx(text: str, source: Path, include_dirs: list[Path], demangle_names) -> list[Fact]:
    """The device side, from the PTX: which source files have code in it
    (`.file` with at least one `.loc`: CUB's headers show here even when all of
    CUB is inlined), the functions defined and declared, and the calls. Lines
    are followed through `inlined_at` back to the compiled file."""
    files: dict[str, str] = {}
    parent: dict[tuple[str, int, int], tuple[str, int, int]] = {}
    used: dict[str, int] = {}  # file number -> the source line it first shows at
    raw: list[tuple[str, str, str, int]] = []  # kind, mangled name, where, line
    function, line, pending = "", 0, ""
    here = str(source)
    lines = text.splitlines()
    for text_line in lines:  # first pass: the file table sits at the end of the PTX
        if (m := _PTX_FILE.match(text_line)) is not None:
            files[m[1]] = m[2]
    for text_line in lines:
        if (m := _PTX_LOC.match(text_line)) is not None:
            loc = (m[1], int(m[2]), int(m[3]))
            if m[4] is not None:
                parent[loc] = (m[4], int(m[5]), int(m[6]))
            line = _source_line(loc, parent, files, here)
            if used.get(loc[0], 0) == 0:  # the first line of the compiled file it shows at
                used[loc[0]] = line
            continue
        if (m := _PTX_FUNC.match(text_line)) is not None:
            extern = "extern" in m[1]
            raw.append((DEVICE_SYMBOL, m[3], "extern" if extern else "defined", 0))
            if not extern:
                function, line = m[3], 0
            continue
        if pending or re.search(r"\bcall(\.uni)?\b", text_line):
            pending += " " + text_line.strip()  # a call spreads over several lines
            if ";" in text_line:
                if (c := _PTX_CALL.search(pending)) is not None:
                    raw.append((DEVICE_CALL, c[1], function, line))
                pending = ""
    raw = [
        (kind, _unprefix(name), _unprefix(where) if kind == DEVICE_CALL else where, line)
        for kind, name, where, line in raw
    ]
    names = demangle_names(sorted({r[1] for r in raw} | {r[2] for r in raw if r[0] == DEVICE_CALL}))
    facts = [
        Fact(
            kind,
            normalise(names.get(name, name)),
            normalise(names.get(where, where)) if kind == DEVICE_CALL else where,
            line,
        )
        for kind, name, where, line in raw
    ]
    for number, line in used.items():
        if number in files:
            facts.append(
                Fact(DEVICE_FILE, _portable_path(files[number], source, include_dirs), "", line)
            )
    return facts


_NV_STATIC = re.compile(r"^__nv_static_\d+__[0-9a-f]+_\d+_\w*?_[0-9a-f]{8}_(?=_Z)")


def _unprefix(name: str) -> str:
    """With -rdc, nvcc prefixes file-local device names with a per-file tag."""
    return _NV_STATIC.sub("", name)


def _source_line(loc: tuple[str, int, int], parent: dict, files: dict[str, str], here: str) -> int:
    """The line of the compiled file that loc was inlined into (0 if none)."""
    seen = set()
    while loc not in seen:
        seen.add(loc)
        if files.get(loc[0]) == here:
            return loc[1]
        if loc not in parent:
            return 0
        loc = parent[loc]
    return 0


def _portable_path(path: str, source: Path, include_dirs: list[Path]) -> str:
    """The same header is the same fact wherever the harness was copied to."""
    p = Path(os.path.normpath(path))
    if p == source:
        return SOURCE
    for d in include_dirs:
        try:
            return f"{INCLUDE}/{p.relative_to(Path(d).resolve()).as_posix()}"
        except ValueError:
            continue
    return p.as_posix()
