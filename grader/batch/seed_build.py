"""One build of the harness per batch: the first worker's, taken by the others."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# What meson writes for each tree itself, with that tree's absolute paths.
_OWN_TO_EACH_TREE = {"build.ninja", "compile_commands.json", ".ninja_lock"}
_OWN_DIRS = {"meson-private", "meson-info", "meson-logs", "meson-uninstalled"}


def seed_build(seed: Path, build: Path, labs_dir: Path) -> None:
    """A newly configured tree takes the outputs of `seed`, a build folder of the
    same harness (another worker's, configured and built in this batch from the
    same copy of the repository), with ninja's log and dependency records, so
    that ninja finds the harness built: meson's compile commands name sources
    relative to the build folder, so both trees run the same ones. Each worker
    building its own costs the batch minutes of cores (see docs/decisions.md,
    "A worker's build tree seeded from another's").

    A lab file whose text differs from the seed tree's (the seed's changed
    after its build, as the preflight's reference does) is then made newer than
    anything taken, so that every object made from it is compiled here again.
    A lab file with the same text keeps the objects taken: they were compiled
    from that text, and compiling them again in every worker would cost the
    batch's set-up as much as the harness itself. Nothing else of `seed`
    depends on a lab."""
    newest = 0  # ns: the latest mtime among what was taken
    for src in seed.rglob("*"):
        rel = src.relative_to(seed)
        if rel.parts[0] in _OWN_DIRS or rel.name in _OWN_TO_EACH_TREE or not src.is_file():
            continue
        dest = build / rel
        if dest.exists() and rel.name not in (".ninja_log", ".ninja_deps"):
            continue  # made by this tree's own configure
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        newest = max(newest, src.stat().st_mtime_ns)
    # Just after the newest output taken, not "now": a compile that ccache
    # answers in a millisecond is stamped by the kernel's coarse clock, which
    # can lag a precise "now" and leave its object older than its source.
    after = newest + 1000
    seed_labs = seed.parent / labs_dir.name
    for f in labs_dir.rglob("*"):
        if not f.is_file() or _same_text(f, seed_labs / f.relative_to(labs_dir)):
            continue
        if f.stat().st_mtime_ns <= newest:
            os.utime(f, ns=(after, after))


def _same_text(ours: Path, theirs: Path) -> bool:
    """Whether the seed tree's copy of a lab file holds the same bytes: an
    object built from it is then one built from ours."""
    try:
        return theirs.read_bytes() == ours.read_bytes()
    except OSError:
        return False
