"""What a lab file really links and calls: compile it so that calls stay
visible, then read the facts the policy check (grader/engine/policy/policy.py) judges.

Spelling can hide a call (a pasted name, an alias, `using namespace`, a
function pointer, dlsym); compiled output cannot. The grader compiles the file
as the build does, calls kept visible (build_flags.py); the tests of the facts
themselves and tuning scripts use this (all 22 lab files compile so):

  .cu   nvcc -c -O0 -Xcompiler=-O0,-fno-inline,-g1 -lineinfo
             -gencode=arch=compute_75,code=compute_75 -gencode=arch=compute_90,code=compute_90
             -std=c++17 [-rdc=true] -keep -keep-dir DIR -I INCLUDE... FILE -o DIR/x.o
  .cpp  g++ -c -O0 -g1 -fno-inline -std=c++17 -I INCLUDE... FILE -o DIR/x.o

Facts come from `objdump -t` (symbols, defined and undefined, demangled: what
`nm -C` lists, plus each one's section), `objdump -d -r -l` (which function
refers to which symbol, from which line; hand-written system call
instructions), `objdump -r` (references from data: function pointers, the
entries of .init_array/.ctors/.fini_array/.dtors) and the PTX (`.file` with
code, `.entry`/`.func`/`.extern .func`, `call` targets, `.loc` lines followed
through `inlined_at`). Every tool runs in a process group of its own, killed
at the timeout, output capped; reading the facts takes under 0.1 s.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...infra import proc, toolchain
from . import build_flags
from .symbol_names import normalise
from .symbol_parse import (
    HOST_REF,
    HOST_SYMBOL,
    STARTUP_SECTIONS,
    Fact,
    parse_data_relocations,
    parse_disassembly,
    parse_ptx,
    parse_symbol_table,
    startup_facts,
)

FORMAT = 1  # bump when facts change meaning: old cache entries are ignored
OUTPUT_CAP = 64 << 20  # bytes of a tool's output that are read; the rest is cut off
LOG_CAP = 20_000  # characters of compiler output kept for the student
# PTX for the oldest architecture the build targets and for the course GPU's
# (H200: 9.0): code under `#if __CUDA_ARCH__ >= 800` exists only in the second.
# Each one costs a pass of the device compiler.
GPU_ARCHS = ("compute_75", "compute_90")


@dataclass
class Compiled:
    source: str
    ok: bool
    log: str = ""  # compiler output (capped), or why the facts are incomplete
    seconds: float = 0.0
    facts: list[Fact] = field(default_factory=list)
    complete: bool = True  # False: a tool failed or was cut off, facts may be missing

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
        return cls(
            nvcc=shutil.which("nvcc"),
            gxx=shutil.which("g++"),
            objdump=shutil.which("objdump"),
            cxxfilt=shutil.which("c++filt"),
        )

    def missing_for(self, source: Path) -> list[str]:
        compiler = ("nvcc", self.nvcc) if source.suffix == ".cu" else ("g++", self.gxx)
        need = [compiler, ("objdump", self.objdump), ("c++filt", self.cxxfilt)]
        return [name for name, path in need if path is None]


# ---------------------------------------------------------------- subprocesses


@dataclass
class Ran:
    rc: int | None  # None: killed at the timeout
    out: str
    truncated: bool


def run(cmd: list[str], *, timeout: float, cwd: Path | None = None, cap: int = OUTPUT_CAP) -> Ran:
    """The grader's one process runner (grader/infra/proc.py): a process group of its
    own, killed as a whole at the timeout (nvcc's children too); output to a
    file, of which only the first `cap` bytes are read."""
    done = proc.run(
        cmd,
        timeout=timeout,
        env=toolchain.compile_env(),
        cwd=cwd,
        background=True,
        options=proc.RunOptions(output_limit=1 << 40, tail=cap + 1, head=True),
    )
    data = done.output
    return Ran(None if done.timed_out else done.code, data[:cap], len(data) > cap)


# ---------------------------------------------------------------- compiling


def compile_command(
    source: Path,
    out_dir: Path,
    include_dirs: list[Path],
    rdc: bool,
    tools: Toolchain,
    like: build_flags.BuildCompile | None = None,
) -> list[str]:
    """The check's compile of source into out_dir/x.o. like: the build's own
    compile of the file (build_flags.for_file), which the grader always
    passes, the input then spelled as the build spells it (compile_facts runs
    it in the build's folder); without it (the tests of the facts themselves,
    tuning scripts), a fixed unoptimised command for host code."""
    includes = [arg for d in include_dirs for arg in ("-I", str(d))]
    obj = str(out_dir / "x.o")
    if like is not None:
        spelled = like.file if like.builds(source) else str(source)
        return (
            build_flags.check_command(like.command, source, out_dir)
            + includes
            + ["-c", spelled, "-o", obj]
        )
    if source.suffix == ".cu":
        archs = [f"-gencode=arch={a},code={a}" for a in GPU_ARCHS]
        return (
            [
                tools.nvcc or "nvcc",
                "-c",
                "-O0",
                "-Xcompiler=-O0,-fno-inline,-g1",
                "-lineinfo",
                *archs,
                "-std=c++17",
            ]
            + (["-rdc=true"] if rdc else [])
            + ["-keep", "-keep-dir", str(out_dir)]
            + includes
            + [str(source), "-o", obj]
        )
    return (
        [tools.gxx or "g++", "-c", "-O0", "-g1", "-fno-inline", "-std=c++17"]
        + includes
        + [str(source), "-o", obj]
    )


def compile_facts(
    source: Path,
    *,
    include_dirs: list[Path],
    rdc: bool,
    work: Path,
    timeout: float,
    instructions: tuple[str, ...],
    tools: Toolchain | None = None,
    like: build_flags.BuildCompile | None = None,
) -> Compiled:
    """Compiles source in a fresh folder under work and reads its facts; the
    folder is removed afterwards. Never raises for a compile error. like: the
    build's compile of the file (compile_command)."""
    tools = tools or Toolchain.find()
    source = source.resolve()
    include_dirs = [Path(d).resolve() for d in include_dirs]  # the compiler runs in out_dir
    started = time.monotonic()
    missing = tools.missing_for(source)
    if missing:
        return Compiled(str(source), False, f"not installed: {', '.join(missing)}")
    work.mkdir(parents=True, exist_ok=True)
    out_dir = Path(tempfile.mkdtemp(prefix="linked-", dir=work))
    try:
        deadline = started + timeout
        # The build's own file runs where the build runs it, under the name the
        # build gives it: __FILE__ and the line tables' paths are the build's.
        built = like is not None and like.builds(source)
        cwd, named = (like.directory, like.named) if like and built else (out_dir, source)
        ran = run(
            compile_command(source, out_dir, include_dirs, rdc, tools, like),
            timeout=timeout,
            cwd=cwd,
            cap=LOG_CAP,
        )
        if ran.rc != 0:
            why = f"the compiler was stopped after {timeout:.0f} s\n" if ran.rc is None else ""
            return Compiled(str(source), False, why + ran.out, time.monotonic() - started)
        facts, notes = read_facts(
            named,
            out_dir / "x.o",
            kept_ptx(out_dir, named),
            include_dirs,
            instructions,
            tools,
            deadline,
        )
        return Compiled(
            str(source),
            True,
            "\n".join(notes),
            time.monotonic() - started,
            facts,
            complete=not notes,
        )
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


# ---------------------------------------------------------------- reading facts


def kept_ptx(folder: Path, source: Path) -> list[Path]:
    """The PTX nvcc -keep left in folder for source: NAME.ptx for one
    architecture, NAME.compute_XY.ptx for several."""
    return sorted(
        {*folder.glob(f"{source.stem}.ptx"), *folder.glob(f"{source.stem}.compute_*.ptx")}
    )


def read_facts(
    source: Path,
    obj: Path,
    ptx_files: list[Path],
    include_dirs: list[Path],
    instructions: tuple[str, ...],
    tools: Toolchain,
    deadline: float,
) -> tuple[list[Fact], list[str]]:
    """The facts of obj and of its PTX files, and notes on anything that
    kept them from being complete."""
    notes: list[str] = []

    def objdump(*args: str) -> str:
        ran = run(
            [tools.objdump or "objdump", *args, str(obj)],
            timeout=max(deadline - time.monotonic(), 5.0),
        )
        if ran.rc != 0 or ran.truncated:
            notes.append(
                f"objdump {' '.join(args)}: "
                + ("output cut at the size limit" if ran.truncated else ran.out[-500:])
            )
        return ran.out

    symbols = parse_symbol_table(objdump("-t", "-C", "-w"))
    facts = [
        Fact(HOST_SYMBOL, normalise(s.name), "undefined" if s.section == "*UND*" else "defined")
        for s in symbols
        if s.is_named
    ]
    code = parse_disassembly(
        objdump("-d", "-r", "-l", "-C", "-w", "--no-show-raw-insn"), source, instructions, symbols
    )
    facts += code.facts
    data_refs = parse_data_relocations(objdump("-r", "-C", "-w"), symbols)
    facts += [
        Fact(HOST_REF, target, section)
        for section, target in data_refs
        if not section.startswith(STARTUP_SECTIONS)
    ]
    facts += startup_facts(data_refs, code.calls)
    for ptx in ptx_files:
        facts += parse_ptx(
            ptx.read_text(errors="replace"),
            source,
            include_dirs,
            lambda names: demangle(names, tools, deadline, notes),
        )
    return sorted(set(facts), key=lambda f: (f.kind, f.name, f.where, f.line)), notes


# PTX -------------------------------------------------------------------------


def demangle(
    names: list[str], tools: Toolchain, deadline: float, notes: list[str]
) -> dict[str, str]:
    """Mangled PTX names to C++ names, with one c++filt for all of them."""
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(mangled) + "\n")
    try:
        ran = run(
            [tools.cxxfilt or "c++filt", f"@{f.name}"],
            timeout=max(deadline - time.monotonic(), 5.0),
        )
    finally:
        os.unlink(f.name)
    if ran.rc != 0 or len(ran.out.splitlines()) != len(mangled):
        notes.append(f"c++filt failed, device names stay mangled: {ran.out[-500:]}")
        return {}
    return dict(zip(mangled, ran.out.splitlines()))


# ---------------------------------------------------------------- names
