"""Where the lab's code runs when there is no bubblewrap sandbox (--sandbox is
the stronger choice, grader/infra/sandbox.py).

Whatever the mode, the checker that judges is a separate process the lab's
code cannot reach (tests/support/runner_link.hpp). Here the runner also gets:
- its own PID namespace (and /proc), when unprivileged user namespaces work:
  it cannot see, signal or ptrace any process of the grader's, and everything
  it starts dies with it;
- the user `nobody`, when the grader runs as root: it cannot write the
  grader's files;
- a private folder as its cwd, HOME and TMPDIR.
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
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import proc
from .runner import RunnerSpec

NOBODY_ID = 65534


def _is_root() -> bool:
    return os.geteuid() == 0


def _unshare_prefix() -> list[str] | None:
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    return [
        unshare,
        "--user",
        "--map-current-user",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--",
    ]


@functools.lru_cache(maxsize=1)
def namespaces_available() -> tuple[bool, str]:
    """Can the runner get its own PID namespace here, as the user it will run as?"""
    prefix = _unshare_prefix()
    if prefix is None:
        return False, "unshare (util-linux) is not installed"
    as_nobody: list[str] = []
    if _is_root():
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return False, "setpriv (util-linux) is not installed"
        as_nobody = [
            setpriv,
            f"--reuid={NOBODY_ID}",
            f"--regid={NOBODY_ID}",
            "--clear-groups",
            "--",
        ]
    cmd = as_nobody + prefix + ["/bin/sh", "-c", "test $$ = 1"]
    done = proc.run(cmd, timeout=60)
    if done.code != 0:
        return False, f"unshare failed ({done.describe()}): {done.output.strip()[-200:]}"
    return True, ""


@dataclass
class Contained:
    """The default: the runner in a PID namespace, as nobody when root."""

    workdir: Path
    prefix: list[str] = field(default_factory=list)
    user: str = ""
    warning: str = ""

    def runner(self, binary: Path, tool_prefix: list[str] | None = None) -> RunnerSpec:
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
    ok, why = namespaces_available()
    prefix = _unshare_prefix() if ok else []
    if prefix is None:  # unshare is gone since namespaces_available() (cached) found it
        ok, why, prefix = False, "unshare (util-linux) is not installed", []
    warning = (
        ""
        if ok
        else (
            f"the lab's code ran without a PID namespace here ({why}); the checker still "
            "kills whatever it leaves behind, but use --sandbox to contain untrusted code"
        )
    )
    return Contained(workdir, prefix, user, warning)
