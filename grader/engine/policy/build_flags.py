"""How the build compiles a lab file, read from meson's compile_commands.json,
so that the linked policy check compiles the file in the same configuration.

Why it matters: what a file compiles to can depend on how it is compiled.
Behind `__builtin_constant_p(x)`, which only an optimising compile folds to
true, `sizeof` of an array of `{__CUDA_ARCH_LIST__}` (one element when the
build targets one architecture), `__FILE__[0] != '/'` (the build names the
file by a relative path) or the last digit of `__TIME__`, a call can exist in
what runs and not in what a differently configured check compiles (`#ifdef
NDEBUG` would do the same, but the fence rules refuse any directive in a
fence). So the check takes the build's own command (compiler, macros,
optimisation level, language standard, GPU architectures, include folders),
runs it where the build runs it on the file named as the build names it, and
adds only what defines no macro and keeps calls visible (ADDITIONS below);
and every compile the grader runs reads one date (toolchain.COMPILE_EPOCH:
__DATE__, __TIME__). tests/attacks/attacks.toml's `policy_by_*` cases are
such submissions; until 2026-11-28 the check compiled at -O0, for two PTX
architectures, without the build's macros, under another name and time.

A GPU lab's runner of labs/ carries the additions in its own build
(tests/meson.build), so its file is compiled once: the check reads that
build's object and kept PTX (kept_by_build, build_facts.kept_facts), about
as much compiler time again saved a GPU lab (lab 07 on 2 cores: build
1.2-1.3 core-s, the check's compile 0.96, reading the build's output 0.01).
Lab 01's host file is compiled again: -fno-inline in its build would make a
call of every helper in the timed CPU loop.

Cost of the compile and facts of a reference file with the build's -O3
-arch=sm_90, against the fixed -O0 command for two PTX architectures
(symbols.py) it replaces, on a 2-core AMD EPYC, median of 3: lab 01 0.46
core-s (0.28), 04 1.13 (1.42), 07 1.07 (1.48), 11 2.56 (3.19): one device
pass instead of two outweighs ptxas and the optimised host code.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

# Arguments that name the input, the output or the dependency file: the check
# writes its own. Each of these takes the next argument as its value.
_WITH_VALUE = {"-o", "-c", "-MF", "-MQ", "-MT", "--output-file", "--compile"}
_ALONE = {"-MD", "-MMD"}
_LAUNCHERS = {"ccache", "sccache"}  # a cache in front of the compiler is not the compiler


@dataclass(frozen=True)
class BuildCompile:
    """One compile of the build: its command without input, output and
    dependency arguments (include folders made absolute), the folder it runs
    in, and its input as it spells it (what __FILE__ expands to)."""

    command: list[str]
    directory: Path
    file: str
    output: str = ""  # the object it writes, from directory

    @property
    def object(self) -> Path:
        return self.directory / self.output

    @property
    def kept(self) -> Path | None:
        """The folder of the build's kept PTX where the build's own object is
        the check's (kept_by_build)."""
        return kept_by_build(self.command)

    @property
    def named(self) -> Path:
        """The file as the compiler's line tables name it, run from directory."""
        return self.directory / self.file

    def builds(self, source: Path) -> bool:
        """Whether source is the very file this compile reads (the student's
        file in the grading tree: the check then compiles it from directory,
        under the build's name; the skeleton and the reference are compiled
        where they are)."""
        return self.named.resolve() == source.resolve()


def for_file(build_dir: Path, target: str, file_name: str) -> BuildCompile | None:
    """The build's compile of file_name in the target (a lab runner:
    lab_grading.runner_target); None when the build folder has no such
    compile (the caller fails closed)."""
    try:
        entries = json.loads((build_dir / "compile_commands.json").read_text())
    except (OSError, ValueError):
        return None
    prefix = f"{target}.p/"
    for entry in entries:
        output = str(entry.get("output", ""))
        file = str(entry.get("file", ""))
        if prefix in output and Path(file).name == file_name:
            directory = Path(entry.get("directory", build_dir))
            return BuildCompile(clean(entry_command(entry), directory), directory, file, output)
    return None


def entry_command(entry: dict) -> list[str]:
    if "arguments" in entry:
        return [str(a) for a in entry["arguments"]]
    return shlex.split(str(entry.get("command", "")))


def clean(command: list[str], directory: Path) -> list[str]:
    args = list(command)
    while args and Path(args[0]).name in _LAUNCHERS:
        args.pop(0)
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in _WITH_VALUE:
            skip = True
            continue
        if arg in _ALONE:
            continue
        if arg.startswith("-I") and i > 0:
            folder = arg[2:] or None
            if folder is None:  # "-I" "dir": the folder is the next argument
                continue
            out.append("-I" + str((directory / folder).resolve()))
            continue
        if i > 0 and args[i - 1] == "-I":
            out.append("-I" + str((directory / arg).resolve()))
            continue
        out.append(arg)
    return out


# What the check adds to the build's own command: host code that calls out
# instead of inlining, line tables, and the PTX kept. None of it defines a
# macro (-fno-inline defines __NO_INLINE__, taken away again where the build
# optimises), so the file preprocesses as in the build: test_build_flags.py
# compares the two commands' macros.
ADDITIONS = {
    ".cu": ["-Xcompiler=-fno-inline,-g1", "-U__NO_INLINE__", "-keep", "-keep-dir", "{out}"],
    ".cpp": ["-fno-inline", "-g1", "-U__NO_INLINE__"],
}


def check_command(like: list[str], source: Path, out_dir: Path) -> list[str]:
    """The build's command (BuildCompile.command) with the check's additions,
    before its input and output: once, with out_dir as the folder of the
    kept files, whether or not the build's command carries them already."""
    added = [
        a.replace("{out}", str(out_dir))
        for a in ADDITIONS[source.suffix if source.suffix == ".cu" else ".cpp"]
    ]
    if not optimised(like):  # the build itself defines __NO_INLINE__
        added.remove("-U__NO_INLINE__")
    return without_additions(like) + added


def without_additions(command: list[str]) -> list[str]:
    """The command without the check's additions (a GPU lab's runner carries
    them: kept_by_build), and so without its folder of kept files."""
    additions = {a for both in ADDITIONS.values() for a in both if a != "{out}"}
    out: list[str] = []
    skip = False
    for arg in command:
        if skip:
            skip = False
        elif arg == "-keep-dir":
            skip = True
        elif arg not in additions:
            out.append(arg)
    return out


def kept_by_build(command: list[str]) -> Path | None:
    """Where the build keeps the PTX of a compile that carries every one of
    the check's additions (tests/meson.build gives them to the GPU labs'
    runners of labs/): the build's own object is then what the check would
    compile, so it is read instead (policy.check_linked), and the file is
    compiled once. None for any other compile."""
    if "-keep-dir" not in command[:-1]:
        return None
    kept = Path(command[command.index("-keep-dir") + 1])
    needed = [a for a in ADDITIONS[".cu"] if a not in ("-keep-dir", "{out}")]
    if not optimised(command):
        needed.remove("-U__NO_INLINE__")
    readable = kept.is_absolute() and ptx_names(command, "x") is not None
    return kept if readable and all(a in command for a in needed) else None


def ptx_names(command: list[str], stem: str) -> list[str] | None:
    """The PTX files nvcc -keep writes for a source named stem.*: stem.ptx for
    one virtual architecture, stem.compute_XY.ptx for each of several. Only
    these are read from the build's folder, where files of an earlier
    configuration may lie. None where the architectures are spelled in a way
    this does not read (the check then compiles the file itself)."""
    virtual: set[str] = set()
    for i, arg in enumerate(command):
        value = arg.split("=", 1)[1] if "=" in arg else None
        if arg in ("-gencode", "--generate-code", "-arch", "--gpu-architecture"):
            value = command[i + 1] if i + 1 < len(command) else None
            name = arg
        else:
            name = arg.split("=", 1)[0]
        if value is None:
            continue
        if name in ("-gencode", "--generate-code"):
            m = re.search(r"arch=(compute_\w+)", value)
            if m is None:
                return None
            virtual.add(m[1])
        elif name in ("-arch", "--gpu-architecture"):
            if value == "native" and not virtual:
                virtual.add("native")
                continue
            m = re.fullmatch(r"(?:sm|compute)_(\w+)", value)
            if m is None:
                return None
            virtual.add(f"compute_{m[1]}")
    if not virtual or ("native" in virtual and len(virtual) > 1):
        return None
    if len(virtual) == 1:
        return [f"{stem}.ptx"]
    return sorted(f"{stem}.{v}.ptx" for v in virtual)


def optimised(command: list[str]) -> bool:
    """Whether the command optimises host code (its last -O, nvcc's or the
    host compiler's through -Xcompiler, is not -O0): GCC then leaves
    __NO_INLINE__ undefined, unless inlining is turned off."""
    level = "0"
    for arg in command:
        for part in arg.removeprefix("-Xcompiler=").split(","):
            m = re.fullmatch(r"-O(\w*)", part)
            if m:
                level = m.group(1) or "1"
    return level != "0"


def key_part(like: BuildCompile | None) -> str:
    """What of the compile decides the facts of a file that includes only the
    harness's headers (hashed apart, by content): the command without its
    include folders, which differ between workers' trees."""
    if like is None:
        return "default"
    return repr([a for a in without_additions(like.command) if not a.startswith("-I")])
