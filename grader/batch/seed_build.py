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

    The lab files are then made newer than anything taken: whatever lab code
    the seed's runner programs were built from, every object made from a lab
    file is compiled here again. Nothing else of `seed` depends on a lab."""
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
    for f in labs_dir.rglob("*"):
        if f.is_file() and f.stat().st_mtime_ns <= newest:
            os.utime(f, ns=(after, after))
