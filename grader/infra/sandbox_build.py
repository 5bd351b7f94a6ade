"""The build of a student's lab (ninja) in a bubblewrap sandbox.

The build runs the student's sources through the compiler as the grader's
user, so an `#include` or `.incbin` of an absolute path could copy the
instructor's solutions or hidden tests into a binary. In this sandbox ninja
sees only the toolchain and the worker's copy of the harness. The real
toolchain is bound read-only: every compiler meson configured (and the install
tree it lives in: a GCC under /opt brings its own libraries), so a machine
whose compilers live outside /usr builds in the sandbox as it does outside.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from . import bwrap, proc, toolchain


def build(
    build_dir: Path,
    target: str,
    *,
    extra_ro: list[str],
    tree: Path | None = None,
    timeout: float = 1800,
) -> toolchain.BuildResult:
    """toolchain.build in a sandbox: ninja sees the toolchain, the folders of extra_ro
    (read-only) and the worker's tree (tree: the harness's source folder, often
    holding build_dir), nothing else."""
    build_dir = Path(build_dir).resolve()
    tree = Path(tree).resolve() if tree else build_dir.parent
    ninja = _real_ninja()
    path = ":".join(
        dict.fromkeys(
            [
                os.path.dirname(ninja),
                os.path.dirname(sys.executable),
                *os.environ.get("PATH", "").split(":"),
            ]
        )
    )
    # Every compiler this build really runs, wherever it is installed.
    ro = [
        os.path.dirname(ninja),
        sys.prefix,
        sys.base_prefix,
        *toolchain.toolchain_dirs(build_dir, path),
    ]
    ro += extra_ro
    cmd = [bwrap.bwrap_binary()] + bwrap.namespaces() + bwrap.system_binds(gpus=False)
    cmd += bwrap.extra_dirs(ro)
    cmd += ["--tmpfs", "/tmp", "--bind", str(tree), str(tree)]
    if not build_dir.is_relative_to(tree):
        cmd += ["--bind", str(build_dir), str(build_dir)]
    cmd += [
        "--remount-ro",
        "/",
        "--chdir",
        str(tree),
        "--setenv",
        "PATH",
        path,
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "SOURCE_DATE_EPOCH",
        toolchain.COMPILE_EPOCH,
        "--",
        # bwrap's session of its own is an autogroup of its own where the
        # kernel groups by session: lowered again inside (proc.BACKGROUND_NICE),
        # where the kernel may refuse the first write, made just outside; the
        # nice value comes from outside, and nice(1) may not be in here.
        *proc.background_command(
            [ninja, "-C", str(build_dir), f"tests/{target}"], nice_value=False, tries=3
        ),
    ]
    done = proc.run(cmd, timeout=timeout, background=True)
    if done.timed_out:
        return toolchain.BuildResult(target, False, f"build timed out after {timeout:.0f} s")
    return toolchain.BuildResult(target, done.code == 0, done.output, seconds=done.seconds)


def _real_ninja() -> str:
    """ninja's own binary, not a version manager's shell shim (pyenv) that needs
    the manager's whole tree."""
    found = shutil.which("ninja")
    if found:
        with open(found, "rb") as f:
            if f.read(2) != b"#!":
                return os.path.realpath(found)
    try:
        import ninja  # the PyPI package ships the binary

        cand = os.path.join(ninja.BIN_DIR, "ninja")
        if os.access(cand, os.X_OK):
            return cand
    except ImportError:
        pass
    if os.access("/usr/bin/ninja", os.X_OK):
        return "/usr/bin/ninja"
    raise bwrap.SandboxError("ninja is not installed")
