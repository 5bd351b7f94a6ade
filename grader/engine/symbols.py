"""What a lab file really links and calls: compile it so that calls stay
visible, then read the facts the policy check (grader/engine/policy.py) judges.

Spelling can hide a call (a macro that pastes a name, an alias, `using
namespace`, a function pointer, dlsym); compiled output cannot. So the file is
compiled as the build compiles it, except that host code is not optimised,
where an inlined call would vanish from the object:

  .cu   nvcc -c -O0 -Xcompiler=-O0,-fno-inline,-g1 -lineinfo
             -gencode=arch=compute_75,code=compute_75 -gencode=arch=compute_90,code=compute_90
             -std=c++17 [-rdc=true] -keep -keep-dir DIR -I INCLUDE... FILE -o DIR/x.o
  .cpp  g++ -c -O0 -g1 -fno-inline -std=c++17 -I INCLUDE... FILE -o DIR/x.o

All 22 files of labs/ and solutions/ compile so (the tests check it). Why each
flag: -O0 keeps every host call a call (-fno-inline is the default at -O0 and
stays as a statement of intent); -g1 gives host code line tables and nothing
else, so a violation names the student's line for about the compile time of
no debug information at all (-g costs a third more on lab 01); -lineinfo puts
`.file` and `.loc` in the PTX, without which fully inlined CUB leaves no trace
on the device side, while the device code stays optimised as in the build;
PTX only (no ptxas) is faster, for compute_75, the oldest target of the
build, and compute_90, the course GPU's, since code under `#if __CUDA_ARCH__
>= 800` exists only there; -rdc=true is needed by lab 10 (device-side
launches) and comes from the lab's `rdc`; -keep leaves the PTX in DIR.

Facts come from `objdump -t` (symbols, defined and undefined, demangled: what
`nm -C` lists, plus each one's section), `objdump -d -r -l` (which function
refers to which symbol, from which line; hand-written system call
instructions), `objdump -r` (references from data: function pointers, the
entries of .init_array/.ctors/.fini_array/.dtors) and the PTX (`.file` with
code, `.entry`/`.func`/`.extern .func`, `call` targets, `.loc` lines followed
through `inlined_at`). Every tool runs in a process group of its own, killed
as a whole at the timeout, with its output capped.

Cost per student file, compile included, the skeleton's and reference's
facts being cached in the work folder by content (a batch pays for them
once), measured with grader/tests/test_policy_symbols.py (which prints it) on
a 2-core x86 machine with CUDA 13.0 and g++ 12 that others were loading:
lab 01 (.cpp) 0.6 to 1.0 s, lab 04 (.cu) 2.5 to 3.7 s (of which about 0.5 s
is the second PTX architecture). The compiler takes nearly all of it;
reading the facts takes under 0.1 s.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from ..infra import proc

FORMAT = 1                 # bump when facts change meaning: old cache entries are ignored
OUTPUT_CAP = 64 << 20      # bytes of a tool's output that are read; the rest is cut off
LOG_CAP = 20_000           # characters of compiler output kept for the student
# PTX for the oldest architecture the build targets and for the course GPU's
# (H200: 9.0): code under `#if __CUDA_ARCH__ >= 800` exists only in the second.
# Each one costs a pass of the device compiler.
GPU_ARCHS = ("compute_75", "compute_90")

# Kinds of fact. `where` says where the fact sits, as noted.
HOST_SYMBOL = "host-symbol"      # where: "defined" or "undefined"
HOST_REF = "host-ref"            # a host function or data section (where) refers to name
HOST_INSN = "host-insn"          # an instruction (name) in a host function (where)
STARTUP = "startup"              # runs before main or at exit: an entry (where: its section),
                                 # or a function such an entry calls (where: the entry)
DEVICE_FILE = "device-file"      # the PTX has code from this source file
DEVICE_SYMBOL = "device-symbol"  # where: "defined" (.entry/.func) or "extern" (.extern .func)
DEVICE_CALL = "device-call"      # a device function (where) calls name

STARTUP_SECTIONS = (".init_array", ".ctors", ".fini_array", ".dtors")
SOURCE = "<source>"      # the compiled file, in device file paths
INCLUDE = "<include>"    # an include directory, in device file paths


@dataclass(frozen=True)
class Fact:
    kind: str
    name: str           # demangled, compiler-made names normalised (see normalise)
    where: str = ""
    line: int = 0       # line of the compiled file the fact comes from; 0: unknown or elsewhere

    @property
    def key(self) -> tuple[str, str, str]:
        """What is compared with the skeleton and the reference: lines differ, facts not."""
        return (self.kind, self.name, self.where)


@dataclass
class Compiled:
    source: str
    ok: bool
    log: str = ""                 # compiler output (capped), or why the facts are incomplete
    seconds: float = 0.0
    facts: list[Fact] = field(default_factory=list)
    complete: bool = True         # False: a tool failed or was cut off, facts may be missing

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Compiled:
        data = json.loads(text)
        data["facts"] = [Fact(**f) for f in data["facts"]]
        return cls(**data)


@dataclass(frozen=True)
class Toolchain:
    nvcc: str | None
    gxx: str | None
    objdump: str | None
    cxxfilt: str | None

    @classmethod
    def find(cls) -> Toolchain:
        return cls(nvcc=shutil.which("nvcc"), gxx=shutil.which("g++"),
                   objdump=shutil.which("objdump"), cxxfilt=shutil.which("c++filt"))

    def missing_for(self, source: Path) -> list[str]:
        compiler = ("nvcc", self.nvcc) if source.suffix == ".cu" else ("g++", self.gxx)
        need = [compiler, ("objdump", self.objdump), ("c++filt", self.cxxfilt)]
        return [name for name, path in need if path is None]


# ---------------------------------------------------------------- subprocesses

@dataclass
class Ran:
    rc: int | None        # None: killed at the timeout
    out: str
    truncated: bool


def run(cmd: list[str], *, timeout: float, cwd: Path | None = None,
        cap: int = OUTPUT_CAP) -> Ran:
    """The grader's one process runner (grader/infra/proc.py): a process group of its
    own, killed as a whole at the timeout (nvcc's children too); output to a
    file, of which only the first `cap` bytes are read."""
    done = proc.run(cmd, timeout=timeout, cwd=cwd, output_limit=1 << 40, tail=cap + 1, head=True)
    data = done.output
    return Ran(None if done.timed_out else done.code, data[:cap], len(data) > cap)


# ---------------------------------------------------------------- compiling

def compile_command(source: Path, out_dir: Path, include_dirs: list[Path], rdc: bool,
                    tools: Toolchain) -> list[str]:
    includes = [arg for d in include_dirs for arg in ("-I", str(d))]
    obj = str(out_dir / "x.o")
    if source.suffix == ".cu":
        archs = [f"-gencode=arch={a},code={a}" for a in GPU_ARCHS]
        return ([tools.nvcc or "nvcc", "-c", "-O0", "-Xcompiler=-O0,-fno-inline,-g1", "-lineinfo",
                 *archs, "-std=c++17"] + (["-rdc=true"] if rdc else [])
                + ["-keep", "-keep-dir", str(out_dir)] + includes + [str(source), "-o", obj])
    return ([tools.gxx or "g++", "-c", "-O0", "-g1", "-fno-inline", "-std=c++17"] + includes
            + [str(source), "-o", obj])


def compile_facts(source: Path, *, include_dirs: list[Path], rdc: bool, work: Path,
                  timeout: float, instructions: tuple[str, ...],
                  tools: Toolchain | None = None) -> Compiled:
    """Compiles source in a fresh folder under work and reads its facts; the
    folder is removed afterwards. Never raises for a compile error."""
    tools = tools or Toolchain.find()
    source = source.resolve()
    include_dirs = [Path(d).resolve() for d in include_dirs]   # the compiler runs in out_dir
    started = time.monotonic()
    missing = tools.missing_for(source)
    if missing:
        return Compiled(str(source), False, f"not installed: {', '.join(missing)}")
    work.mkdir(parents=True, exist_ok=True)
    out_dir = Path(tempfile.mkdtemp(prefix="linked-", dir=work))
    try:
        deadline = started + timeout
        ran = run(compile_command(source, out_dir, include_dirs, rdc, tools),
                  timeout=timeout, cwd=out_dir, cap=LOG_CAP)
        if ran.rc != 0:
            why = f"the compiler was stopped after {timeout:.0f} s\n" if ran.rc is None else ""
            return Compiled(str(source), False, why + ran.out,
                            time.monotonic() - started)
        facts, notes = _read_facts(source, out_dir, include_dirs, instructions, tools, deadline)
        return Compiled(str(source), True, "\n".join(notes), time.monotonic() - started, facts,
                        complete=not notes)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def cached_facts(source: Path, *, include_dirs: list[Path], rdc: bool, work: Path,
                 timeout: float, instructions: tuple[str, ...],
                 tools: Toolchain | None = None) -> Compiled:
    """compile_facts, cached in work/facts-cache by everything that decides the
    result: the file's content, the headers' content, the flags, the tools.
    For the skeleton and the reference, which a batch meets once per student."""
    tools = tools or Toolchain.find()
    if not source.is_file():
        return Compiled(str(source), False, "the file is missing")
    key = _cache_key(source, include_dirs, rdc, instructions, tools)
    entry = work / "facts-cache" / f"{key}.json"
    if entry.exists():
        try:
            return Compiled.from_json(entry.read_text())
        except (ValueError, TypeError, KeyError):
            pass   # a damaged entry: compile again and overwrite it
    compiled = compile_facts(source, include_dirs=include_dirs, rdc=rdc, work=work,
                             timeout=timeout, instructions=instructions, tools=tools)
    if compiled.ok and compiled.complete:   # a failure may be a busy machine's: retry next time
        entry.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=entry.parent, suffix=".tmp", delete=False) as f:
            f.write(compiled.to_json())
        os.replace(f.name, entry)   # atomic: parallel workers never read half an entry
    return compiled


def _cache_key(source: Path, include_dirs: list[Path], rdc: bool,
               instructions: tuple[str, ...], tools: Toolchain) -> str:
    h = hashlib.sha256()
    for part in (str(FORMAT), source.name, str(rdc), repr(instructions), repr(tools),
                 repr(compile_command(Path("S"), Path("D"), [], rdc, tools))):
        h.update(part.encode() + b"\0")
    h.update(source.read_bytes())
    for d in include_dirs:   # the headers decide what the file compiles to
        for header in sorted(p for p in Path(d).rglob("*") if p.is_file()):
            h.update(str(header.relative_to(d)).encode() + b"\0" + header.read_bytes())
    for tool in (tools.nvcc, tools.gxx):   # a toolkit upgrade changes the facts
        if tool:
            stat = Path(tool).resolve().stat()
            h.update(f"{tool}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


# ---------------------------------------------------------------- reading facts

def _read_facts(source: Path, out_dir: Path, include_dirs: list[Path],
                instructions: tuple[str, ...], tools: Toolchain,
                deadline: float) -> tuple[list[Fact], list[str]]:
    """The facts, and notes on anything that kept them from being complete."""
    obj = out_dir / "x.o"
    notes: list[str] = []

    def objdump(*args: str) -> str:
        ran = run([tools.objdump or "objdump", *args, str(obj)],
                  timeout=max(deadline - time.monotonic(), 5.0))
        if ran.rc != 0 or ran.truncated:
            notes.append(f"objdump {' '.join(args)}: "
                         + ("output cut at the size limit" if ran.truncated else ran.out[-500:]))
        return ran.out

    symbols = parse_symbol_table(objdump("-t", "-C", "-w"))
    facts = [Fact(HOST_SYMBOL, normalise(s.name), "undefined" if s.section == "*UND*" else "defined")
             for s in symbols if s.is_named]
    code = parse_disassembly(objdump("-d", "-r", "-l", "-C", "-w", "--no-show-raw-insn"),
                             source, instructions, symbols)
    facts += code.facts
    data_refs = parse_data_relocations(objdump("-r", "-C", "-w"), symbols)
    facts += [Fact(HOST_REF, target, section) for section, target in data_refs
              if not section.startswith(STARTUP_SECTIONS)]
    facts += _startup_facts(data_refs, code.calls)
    for ptx in sorted(out_dir.glob("*.ptx")):
        facts += parse_ptx(ptx.read_text(errors="replace"), source, include_dirs,
                           lambda names: demangle(names, tools, deadline, notes))
    return sorted(set(facts), key=lambda f: (f.kind, f.name, f.where, f.line)), notes


@dataclass(frozen=True)
class Symbol:
    name: str
    section: str
    value: int
    size: int
    is_function: bool

    @property
    def is_named(self) -> bool:
        return bool(self.name) and self.name != self.section   # a section's own symbol names nothing


_SYMBOL_LINE = re.compile(r"^([0-9a-f]+)\s(.{7})\s(\S+)\s+([0-9a-f]+)\s+(?:\.hidden\s+)?(.*)$")


def parse_symbol_table(text: str) -> list[Symbol]:
    """`objdump -t -C -w`: value, seven flag characters, section, size, name."""
    out = []
    for line in text.splitlines():
        m = _SYMBOL_LINE.match(line)
        if m is None or "d" in m[2][5:7] or "f" in m[2][6]:   # debugging and file symbols
            continue
        out.append(Symbol(m[5].strip(), m[3], int(m[1], 16), int(m[4], 16), "F" in m[2]))
    return out


@dataclass
class CodeFacts:
    facts: list[Fact]
    calls: dict[str, set[str]]     # function -> what it refers to (for the startup facts)


_FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")
_LINE_INFO = re.compile(r"^(\S.*):(\d+)(?: \(discriminator \d+\))?$")
_INSN = re.compile(r"^\s+[0-9a-f]+:\t([^\t]*)(?:\t(.*))?$")
_RELOC = re.compile(r"(R_X86_64_\w+)\s+(\S.*)$")
_LOCAL_CALL = re.compile(r"^call\w*\s+[0-9a-f]+ <(.*)>$")


def parse_disassembly(text: str, source: Path, instructions: tuple[str, ...],
                      symbols: list[Symbol]) -> CodeFacts:
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
            target = c[1]   # a call within the section needs no relocation
        if target:
            target = normalise(target)
            facts.append(Fact(HOST_REF, target, function, line))
            calls.setdefault(function, set()).add(target)
    return CodeFacts(facts, calls)


_RELOC_SECTION = re.compile(r"^RELOCATION RECORDS FOR \[(.*)\]:$")
_RELOC_ROW = re.compile(r"^[0-9a-f]+\s+(R_\w+)\s+(\S.*)$")
_NOT_DATA = (".text", ".eh_frame", ".debug", ".rela", ".gcc_except_table", ".nvFatBinSegment",
             "__nv")


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
        offset += 4   # PC-relative: the addend is biased by the 4 bytes of the field
    for s in symbols:
        if s.is_function and s.section == m[1] and s.value <= offset < s.value + max(s.size, 1):
            return s.name
    return None


def _startup_facts(data_refs: list[tuple[str, str]], calls: dict[str, set[str]]) -> list[Fact]:
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


# PTX -------------------------------------------------------------------------

_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
_PTX_FUNC = re.compile(
    r"^\s*((?:\.(?:visible|weak|extern)\s+)*)\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_PTX_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([A-Za-z_$][\w$]*)")


def parse_ptx(text: str, source: Path, include_dirs: list[Path], demangle_names) -> list[Fact]:
    """The device side, from the PTX: which source files have code in it
    (`.file` with at least one `.loc`: CUB's headers show here even when all of
    CUB is inlined), the functions defined and declared, and the calls. Lines
    are followed through `inlined_at` back to the compiled file."""
    files: dict[str, str] = {}
    parent: dict[tuple[str, int, int], tuple[str, int, int]] = {}
    used: dict[str, int] = {}                 # file number -> the source line it first shows at
    raw: list[tuple[str, str, str, int]] = []     # kind, mangled name, where, line
    function, line, pending = "", 0, ""
    here = str(source)
    lines = text.splitlines()
    for text_line in lines:   # first pass: the file table sits at the end of the PTX
        if (m := _PTX_FILE.match(text_line)) is not None:
            files[m[1]] = m[2]
    for text_line in lines:
        if (m := _PTX_LOC.match(text_line)) is not None:
            loc = (m[1], int(m[2]), int(m[3]))
            if m[4] is not None:
                parent[loc] = (m[4], int(m[5]), int(m[6]))
            line = _source_line(loc, parent, files, here)
            if used.get(loc[0], 0) == 0:   # the first line of the compiled file it shows at
                used[loc[0]] = line
            continue
        if (m := _PTX_FUNC.match(text_line)) is not None:
            extern = "extern" in m[1]
            raw.append((DEVICE_SYMBOL, m[3], "extern" if extern else "defined", 0))
            if not extern:
                function, line = m[3], 0
            continue
        if pending or re.search(r"\bcall(\.uni)?\b", text_line):
            pending += " " + text_line.strip()   # a call spreads over several lines
            if ";" in text_line:
                if (c := _PTX_CALL.search(pending)) is not None:
                    raw.append((DEVICE_CALL, c[1], function, line))
                pending = ""
    raw = [(kind, _unprefix(name), _unprefix(where) if kind == DEVICE_CALL else where, line)
           for kind, name, where, line in raw]
    names = demangle_names(sorted({r[1] for r in raw} | {r[2] for r in raw if r[0] == DEVICE_CALL}))
    facts = [Fact(kind, normalise(names.get(name, name)),
                  normalise(names.get(where, where)) if kind == DEVICE_CALL else where, line)
             for kind, name, where, line in raw]
    for number, line in used.items():
        if number in files:
            facts.append(Fact(DEVICE_FILE, _portable_path(files[number], source, include_dirs), "", line))
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


def demangle(names: list[str], tools: Toolchain, deadline: float,
             notes: list[str]) -> dict[str, str]:
    """Mangled PTX names to C++ names, with one c++filt for all of them."""
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(mangled) + "\n")
    try:
        ran = run([tools.cxxfilt or "c++filt", f"@{f.name}"], timeout=max(deadline - time.monotonic(), 5.0))
    finally:
        os.unlink(f.name)
    if ran.rc != 0 or len(ran.out.splitlines()) != len(mangled):
        notes.append(f"c++filt failed, device names stay mangled: {ran.out[-500:]}")
        return {}
    return dict(zip(mangled, ran.out.splitlines()))


# ---------------------------------------------------------------- names

# Names the compilers make up per file or per run: the same code must give the
# same fact in the student's file and in the reference.
_MADE_UP = [
    (re.compile(r"\d*_GLOBAL__N__[0-9a-f]+_\d+_\w*?_[0-9a-f]{8}(?=\d|\W|$)"), "(anonymous namespace)"),
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


_SPECIAL_PREFIXES = ("vtable for ", "typeinfo for ", "typeinfo name for ", "guard variable for ",
                     "VTT for ", "construction vtable for ", "non-virtual thunk to ",
                     "virtual thunk to ", "covariant return thunk to ", "TLS init function for ",
                     "TLS wrapper function for ", "reference temporary #0 for ")
_ANON = "(anonymous namespace)"


def bare_name(demangled: str) -> str:
    """The qualified name without return type, template arguments or
    parameters: `int std::accumulate<int const*, int>(int const*, ...)` is
    `std::accumulate`. Patterns in policy.toml are matched against this."""
    s = demangled
    for prefix in _SPECIAL_PREFIXES:
        if s.startswith(prefix):
            s = s[len(prefix):]
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
        if top and s.startswith("operator", i) and (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")):
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
