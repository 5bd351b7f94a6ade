"""Facts of what the build made (grader/engine/policy/symbols.py's facts, read
without compiling): the build's own object, what runs (policy.check_built),
and, where the build's compile carried the check's additions
(build_flags.kept_by_build), its object and kept PTX in place of the check's
own compile (policy.check_linked)."""

from __future__ import annotations

import time
from pathlib import Path

from . import build_flags
from .symbols import Compiled, Toolchain, read_facts


def object_facts(
    obj: Path,
    named: Path,
    *,
    instructions: tuple[str, ...],
    ptx: list[Path] | None = None,
    include_dirs: list[Path] | None = None,
    timeout: float = 60,
    tools: Toolchain | None = None,
) -> Compiled:
    """The facts of the build's object `obj` of the source `named`: its host
    facts (policy.check_built), and the device facts of `ptx` where given."""
    tools = tools or Toolchain.find()
    started = time.monotonic()
    if not obj.is_file():
        return Compiled(str(named), False, f"{obj} does not exist")
    dirs = [Path(d).resolve() for d in include_dirs or []]
    facts, notes = read_facts(named, obj, ptx or [], dirs, instructions, tools, started + timeout)
    seconds = time.monotonic() - started
    return Compiled(str(named), True, "\n".join(notes), seconds, facts, complete=not notes)


def kept_facts(
    like: build_flags.BuildCompile,
    kept: Path,
    *,
    include_dirs: list[Path],
    instructions: tuple[str, ...],
    timeout: float,
    tools: Toolchain | None = None,
) -> Compiled:
    """compile_facts's facts of the file without compiling it: the build's own
    compile carried the check's additions (build_flags.kept_by_build), so its
    object and the PTX it kept in `kept` are what the check's compile would
    make."""
    ptx = [kept / n for n in build_flags.ptx_names(like.command, like.named.stem) or []]
    if not ptx or not all(p.is_file() for p in ptx):
        return Compiled(str(like.named), False, f"the build kept no PTX of it in {kept}")
    return object_facts(
        like.object,
        like.named,
        instructions=instructions,
        ptx=ptx,
        include_dirs=include_dirs,
        timeout=timeout,
        tools=tools,
    )
