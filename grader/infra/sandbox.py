"""Running untrusted student code in a sandbox (bubblewrap).

`batch --sandbox` builds and runs every lab of a submission in a bubblewrap
sandbox (Debian: apt install bubblewrap). What runs in it is the runner, the
process that holds the student's code; the checker that judges it stays
outside (tests/support/runner_link.hpp):

- The runner runs as an unprivileged user (`nobody` when the grader is root,
  else the grader's own user) in new user, mount, PID, network, IPC and UTS
  namespaces. It sees a read-only root holding /usr (the toolchain, the C++
  and CUDA runtimes), a copy of its own binary (read-only), the device node of
  its worker's GPU only (plus the driver's control nodes), and one writable
  folder: the submission's own (its HOME, TMPDIR and working directory). The
  course repository, the instructor's solutions and hidden tests, the
  checker, other students' folders and the grader's output are not there at
  all. There is no network (a private loopback only).
- Limits, set inside the sandbox with prlimit: CPU time, memory (data
  segment), processes (counted in the sandbox's own user namespace, so a fork
  bomb cannot starve anything else), the size of any file it writes (which
  includes its output: the runner sends stdout and stderr to a file and also
  stops a process whose output passes the limit), open files, no core dumps.
  A hang is ended by the runner's timeout; killing the sandbox kills every
  process in it (PID namespace, --die-with-parent).
- The build of the student's lab (ninja) runs in a sandbox too, as the
  grader's user but seeing only the toolchain and the worker's copy of the
  harness, so that `#include` or `.incbin` of an absolute path cannot copy the
  instructor's solutions into a binary.

The build runs in a sandbox too, with the real toolchain bound read-only:
every compiler meson configured (and the install tree it lives in: a GCC
under /opt brings its own libraries), so a machine whose compilers live
outside /usr builds in the sandbox as it does outside.

The sandbox is a hook: lab_grading.grade_lab(..., isolation=cell) builds with
cell.build() and runs the checker with cell.runner(binary) as its runner.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import signal
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import proc, toolchain
from .runner import RunnerSpec

NOBODY = 65534
MiB = 1 << 20
# Environment variables a test binary may see; everything else is cleared.
_PASS_ENV_PREFIXES = ("LAB_", "CUDA_", "GTEST_", "NVIDIA_", "OMP_")
_PASS_ENV = {"LANG", "LC_ALL", "TZ", "SEED"}


class SandboxError(toolchain.SetupError):
    """bubblewrap cannot make a sandbox here; the message says why."""


@dataclass
class Limits:
    """What one sandboxed test binary may use."""

    memory_mb: int = 16384  # RLIMIT_DATA: heap, anonymous maps, thread stacks
    processes: int = 256  # RLIMIT_NPROC inside the sandbox's user namespace
    output_mb: int = 8  # stdout + stderr, and any single file it writes
    cpu_seconds: int | None = None  # default: 4x the lab's timeout (threads add up)
    open_files: int = 1024

    @classmethod
    def parse(cls, items: list[str] | None) -> "Limits":
        """KEY=VALUE items (memory_mb=4096, processes=128, ...) -> Limits."""
        limits = cls()
        for item in items or []:
            key, _, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if key not in cls.__dataclass_fields__ or not value.strip().isdigit():
                raise ValueError(
                    f"bad sandbox limit {item!r}: use one of "
                    f"{', '.join(cls.__dataclass_fields__)} = a whole number"
                )
            setattr(limits, key, int(value))
        return limits


def _is_root() -> bool:
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


def _system_binds(gpu_node: str | None = None, gpus: bool = True) -> list[str]:
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


def _extra_dirs(paths: list[str]) -> list[str]:
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


def _namespaces() -> list[str]:
    # --disable-userns (bubblewrap 0.8): no nested user namespace from inside.
    return [
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ] + (["--disable-userns"] if _bwrap_has("--disable-userns") else [])


@functools.lru_cache(maxsize=4)
def available(as_nobody: bool | None = None) -> tuple[bool, str]:
    """Can bubblewrap make the sandbox here? (ok, why not). Runs a trivial sandbox
    with the same namespaces and the same user as a real one."""
    bwrap, prlimit = shutil.which("bwrap"), shutil.which("prlimit")
    if not bwrap:
        return False, ("bubblewrap (bwrap) is not installed; Debian/Ubuntu: apt install bubblewrap")
    if not prlimit:
        return False, "prlimit (util-linux) is not installed"
    as_nobody = _is_root() if as_nobody is None else as_nobody
    cmd = (
        (_drop_privileges() if as_nobody else [])
        + [bwrap]
        + _namespaces()
        + _system_binds()
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


def _reachable(folder: Path) -> bool:
    """Can any user pass through every folder down to `folder` (o+x)?"""
    folder = folder.resolve()
    try:
        return all(os.stat(p).st_mode & 0o001 for p in [folder, *folder.parents])
    except OSError:
        return False


def _bwrap_binary() -> str:
    """bwrap's path. A Sandbox exists only where available() found it; this
    fails clearly should it have been removed since."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError("bubblewrap (bwrap) is no longer installed")
    return bwrap


def _drop_privileges(uid: int = NOBODY, gid: int = NOBODY) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


class Sandbox:
    """The sandboxes of one grading worker: a root folder holding read-only
    copies of test binaries and one writable folder per submission."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        timeout: float = 600.0,
        base: Path | None = None,
        extra_ro: list[str] | None = None,
        uid: int | None = None,
        gpu_node: str | None = None,
        gpu_env: dict[str, str] | None = None,
        toolchain: list[str] | None = None,
    ):
        ok, why = available()
        if not ok:
            raise SandboxError(why)
        self.limits = limits or Limits()
        self.timeout = timeout
        self.uid = uid if uid is not None else (NOBODY if _is_root() else os.getuid())
        self.gid = NOBODY if _is_root() else os.getgid()
        # Under the system's temp folder: the sandbox user must be able to reach it
        # (a grader's output folder may sit under a private home or pytest's 0700
        # tmp; a Slurm job's $TMPDIR may be private to the job's user).
        if base is None:
            base = next(
                (
                    Path(d)
                    for d in (tempfile.gettempdir(), "/tmp", "/var/tmp")
                    if not _is_root() or _reachable(Path(d))
                ),
                None,
            )
            if base is None:
                raise SandboxError(
                    "no folder that the sandbox user can reach for the "
                    "sandboxes (tried $TMPDIR, /tmp, /var/tmp)"
                )
        self.root = Path(tempfile.mkdtemp(prefix="grader-sandbox-", dir=base))
        os.chmod(self.root, 0o711)
        for sub in ("bin", "home"):
            (self.root / sub).mkdir(mode=0o711)
            os.chmod(self.root / sub, 0o711)
        env_dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
        self.extra_ro = list(extra_ro or []) + env_dirs
        self.gpu_node = gpu_node  # bind only this GPU (a worker's), else all
        self.gpu_env = dict(gpu_env or {})  # CUDA_VISIBLE_DEVICES for the worker's GPU
        self.toolchain = list(toolchain or [])  # folders the build's compilers need

    def cell(self, student: str) -> "Cell":
        """A fresh writable folder for one submission."""
        home = self.root / "home" / f"{student}-{uuid.uuid4().hex[:8]}"
        home.mkdir(mode=0o700)
        if _is_root():
            os.chown(home, self.uid, self.gid)
        return Cell(self, student, home)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class Cell:
    """One submission's sandbox: the hook given to grade_lab and run_gtest."""

    box: Sandbox
    student: str
    workdir: Path  # the submission's own (and only writable) folder
    binaries: dict[str, Path] = field(default_factory=dict)

    @property
    def output_limit(self) -> int:
        return self.box.limits.output_mb * MiB

    @property
    def cpu_seconds(self) -> int:
        return self.box.limits.cpu_seconds or max(60, int(4 * self.box.timeout))

    def _binary(self, path: str) -> Path:
        """A read-only copy of the test binary where the sandbox user can reach it."""
        copy = self.box.root / "bin" / f"{uuid.uuid4().hex[:12]}-{Path(path).name}"
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o755)
        self.binaries[path] = copy
        return copy

    def _inner_env(self, env: dict[str, str]) -> dict[str, str]:
        inner = {
            "PATH": "/usr/local/cuda/bin:/usr/bin:/bin",
            "HOME": str(self.workdir),
            "TMPDIR": str(self.workdir),
            "LANG": "C.UTF-8",
        }
        for k, v in {**env, **self.box.gpu_env}.items():
            if k.startswith(_PASS_ENV_PREFIXES) or k in _PASS_ENV:
                inner[k] = v
        extra = [d for d in self.box.extra_ro if os.path.isdir(d)]
        if extra:
            inner["LD_LIBRARY_PATH"] = ":".join(extra)
        return inner

    def _bwrap(self, binary: Path, env: dict[str, str]) -> list[str]:
        """bwrap's arguments up to and including prlimit's trailing `--`."""
        box, lim = self.box, self.box.limits
        extra = [d for d in box.extra_ro if os.path.isdir(d)]
        cmd = [_bwrap_binary()] + _namespaces() + _system_binds(box.gpu_node)
        cmd += _extra_dirs(extra)
        cmd += [
            "--ro-bind",
            str(binary),
            str(binary),
            "--bind",
            str(self.workdir),
            str(self.workdir),
            "--remount-ro",
            "/",
            "--chdir",
            str(self.workdir),
        ]
        for k, v in sorted(self._inner_env(env).items()):
            cmd += ["--setenv", k, v]
        return cmd + [
            "--",
            shutil.which("prlimit") or "/usr/bin/prlimit",
            f"--cpu={self.cpu_seconds}:{self.cpu_seconds + 5}",
            f"--data={lim.memory_mb * MiB}",
            f"--nproc={lim.processes}",
            f"--fsize={self.output_limit}",
            f"--nofile={lim.open_files}",
            "--core=0",
            "--",
        ]

    def command(self, args: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """The command line that runs args in the sandbox (as `nobody` when the
        grader is root), and the environment of the sandbox's launcher (the
        program itself gets only the variables it needs, set with --setenv)."""
        binary = self.binaries.get(args[0]) or self._binary(args[0])
        cmd = _drop_privileges(self.box.uid, self.box.gid) if _is_root() else []
        cmd += self._bwrap(binary, env) + [str(binary)] + list(args[1:])
        launcher_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        return cmd, launcher_env

    def runner(self, binary: Path, tool_prefix: list[str] | None = None) -> RunnerSpec:
        """How the checker starts a runner in this sandbox: bwrap and prlimit in
        front of a read-only copy of the runner. The checker itself drops to
        `nobody` (when root) before it runs bwrap, and stays outside."""
        copy = self.binaries.get(str(binary)) or self._binary(str(binary))
        prefix = self._bwrap(copy, dict(os.environ)) + list(tool_prefix or [])
        return RunnerSpec(copy, prefix, "nobody" if _is_root() else "", self.workdir)

    def cleanup(self) -> None:
        """Removes the submission's folder and its binaries' copies."""
        shutil.rmtree(self.workdir, ignore_errors=True)
        for copy in self.binaries.values():
            copy.unlink(missing_ok=True)
        self.binaries.clear()

    def explain(self, code: int | None) -> str | None:
        """Why a sandboxed process ended, from its exit code, or None. bwrap exits
        with 128 + N when the binary was killed by signal N."""
        if code is None or 0 <= code <= 128:
            return None
        sig = -code if code < 0 else code - 128
        if sig == signal.SIGXFSZ:
            return (
                f"stopped: wrote more than {self.box.limits.output_mb} MiB of output or to "
                "one file (the sandbox's limit)"
            )
        if sig == signal.SIGXCPU:
            return f"stopped: used more than {self.cpu_seconds} s of CPU time (the sandbox's limit)"
        try:
            return f"killed by signal {signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"

    def note(self) -> str:
        lim = self.box.limits
        return (
            "ran in the grading sandbox: no network, no files outside the submission's own "
            f"folder, at most {lim.processes} processes, {lim.memory_mb} MiB of memory, "
            f"{lim.output_mb} MiB of output; code that needs more fails there"
        )

    # -- the build -----------------------------------------------------------------------------

    def build(
        self, build_dir: Path, target: str, *, tree: Path | None = None, timeout: float = 1800
    ) -> toolchain.BuildResult:
        """toolchain.build in a sandbox: ninja sees the toolchain and the worker's tree
        (tree: the harness's source folder, often holding build_dir), nothing else."""
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
        ro += self.box.extra_ro + self.box.toolchain
        cmd = [_bwrap_binary()] + _namespaces() + _system_binds(gpus=False) + _extra_dirs(ro)
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
            "--",
            ninja,
            "-C",
            str(build_dir),
            f"tests/{target}",
        ]
        done = proc.run(cmd, timeout=timeout)
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
    raise SandboxError("ninja is not installed")
