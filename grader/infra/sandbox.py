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
  harness (sandbox_build.py).

bubblewrap's pieces that both share, and the check that it works here, are in
bwrap.py.

The sandbox is a hook: lab_grading.grade_lab with GradeOptions(isolation=cell)
builds with cell.build() and runs the checker with cell.runner(binary) as its
runner.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox_build, toolchain
from .bwrap import (
    NOBODY,
    SandboxError,
    available,
    bwrap_binary,
    drop_privileges,
    extra_dirs,
    is_root,
    namespaces,
    system_binds,
)
from .runner import RunnerSpec

MiB = 1 << 20
# Environment variables a test binary may see; everything else is cleared.
_PASS_ENV_PREFIXES = ("LAB_", "CUDA_", "GTEST_", "NVIDIA_", "OMP_")
_PASS_ENV = {"LANG", "LC_ALL", "TZ", "SEED"}


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


def _reachable(folder: Path) -> bool:
    """Can any user pass through every folder down to `folder` (o+x)?"""
    folder = folder.resolve()
    try:
        return all(os.stat(p).st_mode & 0o001 for p in [folder, *folder.parents])
    except OSError:
        return False


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
        self.uid = uid if uid is not None else (NOBODY if is_root() else os.getuid())
        self.gid = NOBODY if is_root() else os.getgid()
        # Under the system's temp folder: the sandbox user must be able to reach it
        # (a grader's output folder may sit under a private home or pytest's 0700
        # tmp; a Slurm job's $TMPDIR may be private to the job's user).
        if base is None:
            base = next(
                (
                    Path(d)
                    for d in (tempfile.gettempdir(), "/tmp", "/var/tmp")
                    if not is_root() or _reachable(Path(d))
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
        if is_root():
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

    # bwrap's --unshare-all gives the runner a network namespace with loopback up
    # (bwrap.namespaces), so compute-sanitizer runs may share the GPU (gate.py).
    private_network = True

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
        cmd = [bwrap_binary()] + namespaces() + system_binds(box.gpu_node)
        cmd += extra_dirs(extra)
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
        cmd = drop_privileges(self.box.uid, self.box.gid) if is_root() else []
        cmd += self._bwrap(binary, env) + [str(binary)] + list(args[1:])
        launcher_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        return cmd, launcher_env

    def runner(
        self,
        binary: Path,
        tool_prefix: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> RunnerSpec:
        """How the checker starts a runner in this sandbox: bwrap and prlimit in
        front of a read-only copy of the runner. The checker itself drops to
        `nobody` (when root) before it runs bwrap, and stays outside. bwrap
        clears the environment: the runner's variables come from `env` (the
        checker's; default the grader's), as _inner_env passes them."""
        copy = self.binaries.get(str(binary)) or self._binary(str(binary))
        prefix = self._bwrap(copy, dict(env if env is not None else os.environ))
        prefix += list(tool_prefix or [])
        return RunnerSpec(copy, prefix, "nobody" if is_root() else "", self.workdir)

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
        return sandbox_build.build(
            build_dir,
            target,
            extra_ro=self.box.extra_ro + self.box.toolchain,
            tree=tree,
            timeout=timeout,
        )
