"""bubblewrap's building blocks, and whether it works here.

The runner's sandbox (sandbox.py) and the build's (sandbox_build.py) start
bwrap with the same namespaces, the same read-only view of the system and the
same privilege drop; they differ only in what they bind writable and what they
run. Those shared pieces live here, with the probe that runs a trivial sandbox
to say, before any grading starts, whether this machine can make one at all.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil

from . import proc, toolchain

NOBODY = 65534


class SandboxError(toolchain.SetupError):
    """bubblewrap cannot make a sandbox here; the message says why."""


def is_root() -> bool:
    return os.geteuid() == 0


# The driver's control nodes: every CUDA process needs them, whichever GPU it uses.
_CONTROL_NODES = (
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
)


def _gpu_nodes(only: str | None = None) -> list[str]:
    """The GPU device nodes a sandbox gets: the control nodes, and every GPU's
    node or (only) one of them."""
    gpus = sorted(p for p in glob.glob("/dev/nvidia[0-9]*"))
    if only is not None:
        gpus = [p for p in gpus if p == only]
    return [n for n in _CONTROL_NODES if os.path.exists(n)] + gpus if gpus else []


def system_binds(gpu_node: str | None = None, gpus: bool = True) -> list[str]:
    """The read-only part every sandbox sees: /usr (merged /bin, /lib), ld.so's
    configuration, and (for the CUDA runtime) /sys when there is a GPU."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in (
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
        "/etc/localtime",
    ):
        args += ["--ro-bind-try", etc, etc]
    args += ["--proc", "/proc", "--dev", "/dev"]
    nodes = _gpu_nodes(gpu_node) if gpus else []
    for node in nodes:
        args += ["--dev-bind", node, node]
    if nodes:
        args += ["--ro-bind", "/sys", "/sys"]
    return args


def extra_dirs(paths: list[str]) -> list[str]:
    """Read-only binds for folders outside /usr (a CUDA toolkit under /opt, a
    cluster's module tree, LD_LIBRARY_PATH entries)."""
    args, seen = [], set()
    for p in paths:
        p = os.path.realpath(p)
        if not p or p in seen or not os.path.isdir(p) or p == "/" or p.startswith("/usr/"):
            continue
        seen.add(p)
        args += ["--ro-bind", p, p]
    return args


@functools.lru_cache(maxsize=1)
def _bwrap_has(option: str) -> bool:
    try:
        done = proc.run(["bwrap", "--help"], timeout=30)
    except OSError:
        return False
    return option in done.output


def namespaces() -> list[str]:
    # --disable-userns (bubblewrap 0.8): no nested user namespace from inside.
    return [
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ] + (["--disable-userns"] if _bwrap_has("--disable-userns") else [])


def drop_privileges(uid: int = NOBODY, gid: int = NOBODY) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


def bwrap_binary() -> str:
    """bwrap's path. A sandbox exists only where available() found it; this
    fails clearly should it have been removed since."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError("bubblewrap (bwrap) is no longer installed")
    return bwrap


@functools.lru_cache(maxsize=4)
def available(as_nobody: bool | None = None) -> tuple[bool, str]:
    """Can bubblewrap make the sandbox here? (ok, why not). Runs a trivial sandbox
    with the same namespaces and the same user as a real one."""
    bwrap, prlimit = shutil.which("bwrap"), shutil.which("prlimit")
    if not bwrap:
        return False, ("bubblewrap (bwrap) is not installed; Debian/Ubuntu: apt install bubblewrap")
    if not prlimit:
        return False, "prlimit (util-linux) is not installed"
    as_nobody = is_root() if as_nobody is None else as_nobody
    cmd = (
        (drop_privileges() if as_nobody else [])
        + [bwrap]
        + namespaces()
        + system_binds()
        + ["--remount-ro", "/", "--", prlimit, "--nproc=64", "--", "/bin/true"]
    )
    try:
        probe = proc.run(cmd, timeout=60)
    except OSError as e:
        return False, f"bwrap could not run: {e}"
    if not probe.ok:
        why = probe.output.strip().splitlines()
        return False, (
            "bwrap cannot create a sandbox here (user namespaces unavailable?): "
            + (why[-1] if why else probe.describe())
        )
    return True, ""
