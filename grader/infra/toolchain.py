"""Finding (or installing) meson and ninja, configuring the build folder and
building one target at a time, so that a compile error costs one lab only."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import proc

REPO = Path(__file__).resolve().parents[2]


class SetupError(RuntimeError):
    """The build cannot be set up here; the message says what to do."""


# The operating system's words for a machine that cannot go on: a full or
# read-only disk, a quota, memory or file handles run out.
_ERRNO_WORDS = (
    "No space left on device",
    "Disk quota exceeded",
    "Read-only file system",
    "Cannot allocate memory",
    "Too many open files",
)
# Lines of the tools themselves (no source file named) that say the machine,
# not the code, failed: such a build is the grader's error, never a student's
# "does not compile".
_TOOL_FAULTS = _ERRNO_WORDS + (
    "cannot execute binary file",
    "error while loading shared libraries",
    "ninja: fatal",
    "ninja: error: loading",
    "virtual memory exhausted",
    "out of memory allocating",
    "Failed to preprocess host compiler properties",  # nvcc, when TMPDIR is full
    "Could not open output file",  # nvcc, when TMPDIR cannot be written
    ": not found",
)
# The build's compilers colour their words (-fdiagnostics-color=always).
_COLOUR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# gcc's quote of a source line, and the caret under it: the student's text.
_QUOTED = re.compile(r"^\s*\d*\s*\|")
# A diagnostic about a source or assembler file (file:line: or file(line):).
_SOURCE = re.compile(r"\.(?:cu|cuh|cpp|hpp|cc|h|c|s|S)(?::|\(\d+\))")
# The one form a source diagnostic of the machine's takes: a fatal error that
# ends in the operating system's words (gcc: "x.cpp:4:1: fatal error: error
# writing to /tmp/cc.s: No space left on device"; as: "cc.s: Fatal error:
# can't write ...: 'No space left on device'"), its severity the first word
# after the place. A student's #error, #pragma GCC error, static_assert or
# .error is an "error:" there, never a fatal one; a missing
# #include, the one fatal error whose text a student names, ends in "No such
# file or directory".
_FATAL = re.compile(
    r"\S+?(?::\d+)*(?:\(\d+\))?:\s+(?:fatal|catastrophic) error: .*(?:"
    + "|".join(map(re.escape, _ERRNO_WORDS))
    + r")'?\.?$",
    re.IGNORECASE,
)


def machine_fault(log: str) -> str:
    """The line of a tool's output (a build's, a compile's) that shows it
    failed for the machine's sake, or "". Text the student's code controls is
    never evidence: a diagnostic about a source file counts only in the
    machine's own fatal form (_FATAL), and gcc's quote of a source line never.
    Colours are read past."""
    for raw in _COLOUR.sub("", log).splitlines():
        line = raw.strip()
        if not line or _QUOTED.match(raw):
            continue
        if _SOURCE.search(line):
            if _FATAL.match(line):
                return line
            continue
        if any(k in line for k in _TOOL_FAULTS):
            if line.endswith(": not found") and not line.startswith(("/bin/sh", "sh:")):
                continue  # only the shell's "compiler not found" counts
            return line
    return ""


def tool_fault(log: str) -> str:
    """Why a tool that failed (a build, the policy check's compile or read of a
    file) failed for the machine's sake, or "" where its output blames the
    code. A tool that failed without a word is the machine's: a compiler says
    why the code is wrong and ninja names what failed; they say nothing only
    where their output could not be written (a full or unwritable TMPDIR,
    where the grader keeps it)."""
    if not log.strip():
        return SILENT
    return machine_fault(log)


SILENT = "it failed without a word (its output could not be written: a full or unwritable TMPDIR?)"


@dataclass
class BuildResult:
    target: str
    ok: bool
    log: str = ""  # compiler output, trimmed to the first errors
    seconds: float = 0.0

    @property
    def first_errors(self) -> str:
        lines = [l for l in self.log.splitlines() if "error" in l.lower()]
        return "\n".join(lines[:8]) or self.log[-2000:]

    @property
    def machine_fault(self) -> str:
        """The line that shows the build failed for the machine's sake, or ""."""
        return "" if self.ok else tool_fault(self.log)


# Where the grader installs what is missing: a virtual environment of the
# repository's own (ignored by git, left out of a release), never the user's
# system Python. It sees the system's packages (matplotlib, an installed meson).
VENV = REPO / ".venv"


def _venv_bin() -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin")


def _on_path(tool: str) -> str | None:
    return shutil.which(tool) or shutil.which(tool, path=str(_venv_bin()))


def _meson_cmd() -> list[str] | None:
    found = _on_path("meson")
    if found:
        return [found]
    try:
        import mesonbuild  # noqa: F401

        return [sys.executable, "-m", "mesonbuild.mesonmain"]
    except ImportError:
        return None


def _pip_install(packages: list[str]) -> None:
    """Into VENV (made on first use), whose bin/ then goes first on PATH."""
    python = _venv_bin() / "python"
    if not python.exists():
        print(
            f"[grader] making {VENV} for {' '.join(packages)} (the system Python is left "
            "alone) ...",
            flush=True,
        )
        done = proc.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], timeout=300
        )
        if not done.ok:
            raise SetupError(
                f"could not make a virtual environment in {VENV} "
                f"({done.output.strip()[-300:]}); install "
                f"{' '.join(packages)} yourself (pip install "
                f"{' '.join(packages)}, or your system's packages)"
            )
    print(f"[grader] installing {' '.join(packages)} into {VENV} ...", flush=True)
    done = proc.run([str(python), "-m", "pip", "install", "--quiet", *packages], timeout=900)
    if not done.ok:
        print(done.output[-1500:], flush=True)
        raise SetupError(
            f"could not install {' '.join(packages)} into {VENV}; install them "
            f"yourself (pip install {' '.join(packages)}, or your system's "
            "packages)"
        )
    os.environ["PATH"] = f"{_venv_bin()}{os.pathsep}{os.environ['PATH']}"


def ensure_tools(need_pytest: bool = False) -> list[str]:
    """Returns the command that runs meson, installing meson/ninja/pytest into the
    repository's .venv if missing."""
    missing = []
    if _meson_cmd() is None:
        missing.append("meson")
    if not _on_path("ninja"):
        missing.append("ninja")
    if need_pytest:
        try:
            import pytest  # noqa: F401
        except ImportError:
            # meson's tests run pytest with the Python meson runs under: both go
            # into the venv, together.
            missing += [p for p in ("meson", "ninja", "pytest") if p not in missing]
    if missing:
        _pip_install(missing)
    elif _venv_bin().is_dir() and str(_venv_bin()) not in os.environ["PATH"].split(os.pathsep):
        os.environ["PATH"] = f"{_venv_bin()}{os.pathsep}{os.environ['PATH']}"
    meson = _meson_cmd()
    if meson is None:
        raise SetupError("meson is installed but cannot be run; check your PATH")
    if not shutil.which("nvcc"):
        raise SetupError(
            "nvcc (the CUDA toolkit) is not on PATH; install the CUDA toolkit "
            "or add its bin folder (often /usr/local/cuda/bin) to PATH"
        )
    return meson


# meson setup takes 5-20 s (a GoogleTest download included); a minute more is a hang.
CONFIGURE_TIMEOUT_S = 300


def configure(build_dir: Path, options: list[str] | None = None, source: Path = REPO) -> None:
    """meson setup, once; later builds regenerate by themselves."""
    meson = ensure_tools()
    if (build_dir / "build.ninja").exists() and not options:
        return
    cmd = meson + ["setup", str(build_dir), str(source)] + (options or [])
    if (build_dir / "build.ninja").exists():
        cmd.append("--reconfigure")
    done = proc.run(cmd, timeout=CONFIGURE_TIMEOUT_S)  # a hung setup's whole group is killed
    if not done.ok:
        log = done.output + (f"\n({done.describe()})" if done.timed_out else "")
        hint = ""
        if "dependency gtest" in log.lower() and "not found" in log.lower():
            hint = (
                "\nGoogleTest was not found and could not be downloaded: install it "
                "(Debian/Ubuntu: apt install libgtest-dev) or allow network access."
            )
        raise SetupError(f"meson setup failed:\n{log[-3000:]}{hint}")


# What __DATE__ and __TIME__ say in every compile the grader runs (GCC reads
# SOURCE_DATE_EPOCH; nvcc preprocesses with GCC): the build's and the linked
# policy check's compiles of a file must expand alike (engine/policy/build_flags.py),
# whatever second each one starts in. 2026-01-01 00:00:00 UTC.
COMPILE_EPOCH = "1767225600"


def compile_env() -> dict[str, str]:
    return {**os.environ, "SOURCE_DATE_EPOCH": COMPILE_EPOCH}


def build(
    build_dir: Path, target: str | list[str] | None = None, timeout: float = 1800
) -> BuildResult:
    """Builds one target, several, or everything; never raises for a compile error."""
    targets = [target] if isinstance(target, str) else list(target or [])
    cmd = ["ninja", "-C", str(build_dir)] + [f"tests/{t}" for t in targets]
    # background: never slows a timed run
    done = proc.run(cmd, timeout=timeout, background=True, env=compile_env())
    name = " ".join(targets) or "all"
    if done.timed_out:
        return BuildResult(name, False, f"build timed out after {timeout:.0f} s", done.seconds)
    return BuildResult(name, done.code == 0, done.output, done.seconds)


def toolchain_dirs(build_dir: Path, path: str | None = None) -> list[str]:
    """The install trees of every compiler the build runs: meson's configured
    compilers and the host compilers nvcc finds on PATH (a GCC in /opt/gcc
    comes with its own libraries, so the whole tree is needed, not bin/)."""
    exes: list[str] = []
    done = proc.run(
        [*(_meson_cmd() or ["meson"]), "introspect", str(build_dir), "--compilers"], timeout=120
    )
    if done.code == 0:
        try:
            for machine in json.loads(done.output).values():
                for lang in machine.values():
                    exes += lang.get("exelist", []) + lang.get("linker_exelist", [])
        except (ValueError, AttributeError):
            pass
    exes += ["g++", "gcc", "c++", "cc", "nvcc"]
    dirs = []
    for exe in exes:
        found = exe if os.path.isabs(exe) else shutil.which(exe, path=path)
        if not found or not os.path.exists(found):
            continue
        for p in {found, os.path.realpath(found)}:
            bin_dir = os.path.dirname(p)
            top = os.path.dirname(bin_dir) if os.path.basename(bin_dir) == "bin" else bin_dir
            if top not in ("/", "/usr") and not top.startswith("/usr/") and top not in dirs:
                dirs.append(top)
    return dirs


def git_commit(repo: Path = REPO) -> str:
    """HEAD of the checkout; $LAB_GIT_COMMIT where the tree is a copy without .git
    (the GPU machine receives one)."""
    if os.environ.get("LAB_GIT_COMMIT"):
        return os.environ["LAB_GIT_COMMIT"]
    try:
        sha = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if len(sha) != 40:
            return "unknown"
        return sha + ("+dirty" if dirty else "")
    except OSError:
        return "unknown"
