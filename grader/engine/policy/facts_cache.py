"""The skeleton's and the reference's facts (symbols.compile_facts), compiled
once and kept in work/facts-cache, keyed by everything that decides them.

A batch's workers share one such folder (batch_worker.Worker.policy_work),
and the preflight fills it before any student is graded. Each worker kept a
folder of its own before, so every worker compiled both files of every lab
the first time it met that lab, and with many workers nearly every lab was
met for the first time inside a class's span, seconds each (see
docs/decisions.md, "One cache of the instructor's compiled facts per batch").
One worker compiles an entry
while the others that want it wait (a lock file per entry, so Slurm tasks
sharing the folder take turns too), and then they read it.

The entries are the same in every worker's tree: the key leaves out the
folders (build_flags.key_part drops -I and the folder of kept files; the
headers are hashed by their path inside each include folder), and the facts
name a header by that path too (symbol_parse._portable_path)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from . import build_flags
from .symbols import FORMAT, Compiled, Toolchain, compile_command, compile_facts


def cached_facts(
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
    """compile_facts, cached in work/facts-cache by everything that decides the
    result: the file's content, the headers' content, the flags, the tools.
    For the skeleton and the reference, which a batch meets once per student."""
    tools = tools or Toolchain.find()
    if not source.is_file():
        return Compiled(str(source), False, "the file is missing")
    key = cache_key(source, include_dirs, rdc, instructions, tools, like)
    entry = work / "facts-cache" / f"{key}.json"
    found = _read(entry)
    if found is not None:
        return found
    entry.parent.mkdir(parents=True, exist_ok=True)
    with _alone(entry.with_suffix(".lock")):
        found = _read(entry)  # another worker made it while this one waited
        if found is not None:
            return found
        compiled = compile_facts(
            source,
            include_dirs=include_dirs,
            rdc=rdc,
            work=work,
            timeout=timeout,
            instructions=instructions,
            tools=tools,
            like=like,
        )
        if compiled.ok and compiled.complete:  # a failure may be a busy machine's: retry next time
            with tempfile.NamedTemporaryFile(
                "w", dir=entry.parent, suffix=".tmp", delete=False
            ) as f:
                f.write(compiled.to_json())
            os.replace(f.name, entry)  # atomic: a reader never sees half an entry
    return compiled


def _read(entry: Path) -> Compiled | None:
    """The entry, or None where there is none yet or it is damaged (compiled again
    and overwritten)."""
    try:
        return Compiled.from_json(entry.read_text())
    except (OSError, ValueError, TypeError, KeyError):
        return None


@contextlib.contextmanager
def _alone(lock: Path) -> Iterator[None]:
    """Holds `lock` exclusively (flock: threads and processes alike, each with
    a descriptor of its own); where the file system cannot lock, goes on
    without: two workers then compile the same file, which is slower, not
    wrong."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # closing releases the lock


def cache_key(
    source: Path,
    include_dirs: list[Path],
    rdc: bool,
    instructions: tuple[str, ...],
    tools: Toolchain,
    like: build_flags.BuildCompile | None = None,
) -> str:
    h = hashlib.sha256()
    for part in (
        str(FORMAT),
        source.name,
        str(rdc),
        repr(instructions),
        repr(tools),
        repr(compile_command(Path("S"), Path("D"), [], rdc, tools)),
        build_flags.key_part(like),
    ):
        h.update(part.encode() + b"\0")
    h.update(source.read_bytes())
    for d in include_dirs:  # the headers decide what the file compiles to
        for header in sorted(p for p in Path(d).rglob("*") if p.is_file()):
            h.update(str(header.relative_to(d)).encode() + b"\0" + header.read_bytes())
    for tool in (tools.nvcc, tools.gxx):  # a toolkit upgrade changes the facts
        if tool:
            stat = Path(tool).resolve().stat()
            h.update(f"{tool}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:32]
