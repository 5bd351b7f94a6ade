"""Where the lab's code runs when there is no bubblewrap sandbox (--sandbox is
the stronger choice, grader/infra/sandbox.py).

Whatever the mode, the checker that judges is a separate process the lab's
code cannot reach (tests/support/runner_link.hpp). Here the runner also gets:
- its own PID namespace (and /proc), when unprivileged user namespaces work:
  it cannot see, signal or ptrace any process of the grader's, and everything
  it starts dies with it;
- the user `nobody`, when the grader runs as root: it cannot write the
  grader's files;
- a private folder as its cwd, HOME and TMPDIR;
- its own network namespace, with loopback up and no way out, when the
  namespace allows it (`private_network`);
- limits of its own on processes and host memory (prlimit, RUNNER_PROCESSES),
  counted in its user namespace alone.
Without a namespace (some containers forbid them), the checker's own guards
remain: it is not dumpable (no ptrace, no /proc/PID/mem) and it kills every
process the runner left behind. The note says so, and the README says that
code run as the grader's own user, without --sandbox or root, can still
damage files that user owns.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import proc
from .bwrap import drop_privileges
from .runner import RunnerSpec
from .sandbox import Limits

NOBODY_ID = 65534


def _is_root() -> bool:
    return os.geteuid() == 0


# Run as the first program in the runner's network namespace: brings loopback
# up (unshare --keep-caps lent it the capabilities for that), then drops every
# capability before it starts the runner. compute-sanitizer talks to its target
# over TCP on 127.0.0.1 and an abstract socket named after the target's PID
# ("@nv_target_process_%d" in the tool's binary): in the machine's network
# namespace two runners in PID namespaces of their own have the same PIDs, and
# of two sanitizer runs at once one can take the other's socket and hang until
# its limit (see docs/decisions.md, "Sanitizer places"). A namespace each makes
# the socket theirs, and cuts the lab's code off the network.
_LOOPBACK_UP = """
import ctypes, fcntl, os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0))[:18])[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
s.close()
none = (ctypes.c_uint32 * 6)()
if ctypes.CDLL(None, use_errno=True).capset((ctypes.c_uint32 * 2)(0x20080522, 0), none):
    sys.exit("cannot drop capabilities: errno %d" % ctypes.get_errno())
os.execvp(sys.argv[1], sys.argv[1:])
"""


def _pythons() -> list[str]:
    """Interpreters `nobody` may be able to run (a virtual environment's link
    resolves to the system's)."""
    found = [os.path.realpath(sys.executable), shutil.which("python3") or "", "/usr/bin/python3"]
    return [p for i, p in enumerate(found) if p and os.path.isfile(p) and p not in found[:i]]


# What one runner may use, set with prlimit inside its user namespace, where
# the kernel counts its processes apart from every other runner's (ucounts):
# without them a lab file could start threads or take host memory until the
# students graded beside it failed (std::thread and new are the lab's to use).
# Memory as --sandbox's (sandbox.Limits: the data segment, which takes thread
# stacks and anonymous maps, not CUDA's reserved address space or the
# checker's shared buffers); processes far above the sandbox's 256, since an
# honest sum_threads starts a thread a core, and a machine may have hundreds.
RUNNER_PROCESSES = 4096


def _limits_prefix() -> list[str]:
    """prlimit's wrapping of a contained runner; none where prlimit is missing."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    data = Limits().memory_mb << 20
    return [prlimit, f"--nproc={RUNNER_PROCESSES}", f"--data={data}", "--core=0", "--"]


def _unshare_prefix(python: str | None = None) -> list[str] | None:
    """unshare's wrapping, then the runner's limits; with `python`, also a
    network namespace of its own."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    prefix = [
        unshare,
        "--user",
        "--map-current-user",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
    ]
    limits = _limits_prefix()
    if python is None:
        return prefix + ["--", *limits]  # limits end with their own "--"
    return prefix + ["--net", "--keep-caps", "--", *limits, python, "-I", "-S", "-c", _LOOPBACK_UP]


@dataclass(frozen=True)
class Namespaces:
    """What unshare can give the runner on this machine."""

    ok: bool
    why: str = ""  # why not, when not ok
    prefix: tuple[str, ...] = ()
    private_network: bool = False


def _as_nobody() -> list[str] | None:
    """The prefix that runs a command as the runner's user; None without setpriv."""
    if not _is_root():
        return []
    return drop_privileges(NOBODY_ID, NOBODY_ID) if shutil.which("setpriv") else None


@functools.lru_cache(maxsize=1)
def runner_namespaces() -> Namespaces:
    """The strongest wrapping that works here, as the user the runner runs as:
    PID and network namespaces, else the PID namespace alone, else none."""
    if shutil.which("unshare") is None:
        return Namespaces(False, "unshare (util-linux) is not installed")
    as_nobody = _as_nobody()
    if as_nobody is None:
        return Namespaces(False, "setpriv (util-linux) is not installed")
    why = ""
    for python in [*_pythons(), None]:
        prefix = _unshare_prefix(python) or []
        done = proc.run(as_nobody + prefix + ["/bin/sh", "-c", "test $$ = 1"], timeout=60)
        if done.code == 0:
            return Namespaces(True, "", tuple(prefix), private_network=python is not None)
        why = f"unshare failed ({done.describe()}): {done.output.strip()[-200:]}"
    return Namespaces(False, why)


def namespaces_available() -> tuple[bool, str]:
    """Can the runner get its own PID namespace here, as the user it will run as?"""
    ns = runner_namespaces()
    return ns.ok, ns.why


@dataclass
class Contained:
    """The default: the runner in a PID namespace, as nobody when root."""

    workdir: Path
    prefix: list[str] = field(default_factory=list)
    user: str = ""
    warning: str = ""
    private_network: bool = False  # a network namespace of its own (compute-sanitizer may share)

    def runner(
        self,
        binary: Path,
        tool_prefix: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> RunnerSpec:
        # env: unused here, the runner gets the checker's chosen variables
        # (runner_link.cpp); a sandbox's bwrap needs them on its command line.
        binary = Path(binary)
        if self.user:
            # `nobody` may not be able to reach the build tree (an instructor's
            # private --out folder): give it a copy in its own folder.
            copy = self.workdir / binary.name
            if not copy.exists():
                shutil.copyfile(binary, copy)
                os.chmod(copy, 0o755)
            binary = copy
        return RunnerSpec(binary, self.prefix + list(tool_prefix or []), self.user, self.workdir)

    def note(self) -> str:
        return self.warning

    def cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def contained(base: Path | None = None) -> Contained:
    """A fresh private folder and the wrapping this machine allows."""
    # Under the system's temp folder, which `nobody` can pass through.
    workdir = Path(tempfile.mkdtemp(prefix="lab-runner-", dir=base))
    os.chmod(workdir, 0o700)
    user = ""
    if _is_root():
        user = "nobody"
        os.chown(workdir, NOBODY_ID, NOBODY_ID)
    ns = runner_namespaces()
    ok, why = ns.ok, ns.why
    warning = (
        ""
        if ok
        else (
            f"the lab's code ran without a PID namespace here ({why}); the checker still "
            "kills whatever it leaves behind, but use --sandbox to contain untrusted code"
        )
    )
    return Contained(workdir, list(ns.prefix), user, warning, ns.private_network)
