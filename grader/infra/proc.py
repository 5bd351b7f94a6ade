"""The one way the grader runs a program: in a process group of its own, with
a timeout that kills the whole group (not only the parent: nvcc's and ninja's
children, a checker's runner), its output in a file with a cap, and a clean
record of how it ended."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Finished:
    code: int | None  # exit code; negative: killed by that signal; None: timed out
    timed_out: bool
    over_limit: bool  # wrote more output than allowed, and was killed for it
    output: str  # the output's tail (stdout and stderr together)
    seconds: float

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out and not self.over_limit

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s"
        if self.over_limit:
            return "stopped: too much output"
        if self.code is not None and self.code < 0:
            try:
                return f"killed by signal {signal.Signals(-self.code).name}"
            except ValueError:
                return f"killed by signal {-self.code}"
        return f"exit code {self.code}"


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) for every running process /proc shows;
    a zombie (dead, not yet reaped) is left out: it runs nothing."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # the name may hold spaces and ')'
        if fields[0] != "Z":
            table[int(name)] = (int(fields[1]), fields[19])
    return table


def _descendants(pid: int) -> list[tuple[int, str]]:
    """Every live descendant of pid with its start time (a pid may be reused)."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append((p, table[p][1]))
        todo.extend(children.get(p, []))
    return found


def kill_tree(proc: subprocess.Popen, settle_s: float = 10.0) -> None:
    """Kills proc's group and every descendant, also those that left the group
    (a sandbox's processes run in a session of their own, and a PID namespace's
    processes die only after its first one), then waits, up to settle_s, until
    they are gone: nothing of a timed-out run is left when `run` returns, even
    on a loaded machine where the kernel takes a while to tear them down."""
    doomed = _descendants(proc.pid) if proc.poll() is None else []
    kill_group(proc.pid)
    for pid, _ in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if proc.poll() is None:
        proc.wait()
    deadline = time.monotonic() + settle_s
    while doomed and time.monotonic() < deadline:
        table = _process_table()
        doomed = [(p, start) for p, start in doomed if table.get(p, (0, ""))[1] == start]
        if doomed:
            time.sleep(0.02)


# The process groups `run` has alive, from every thread: an interrupted batch
# kills them all (kill_all) so that no test binary outlives the grader.
_alive: set[int] = set()
_alive_lock = threading.Lock()


def track(pid: int) -> None:
    """A process group started elsewhere (a kept checker: checker_service.py)
    that kill_all must kill too, until untrack(pid)."""
    with _alive_lock:
        _alive.add(pid)


def untrack(pid: int) -> None:
    with _alive_lock:
        _alive.discard(pid)


def kill_all() -> int:
    """Kills every process group `run` has alive; how many there were."""
    with _alive_lock:
        groups = list(_alive)
    for pid in groups:
        kill_group(pid)
    return len(groups)


# Work that shares the machine with a timed run (a batch's builds, policy
# checks, untimed tests and compute-sanitizer runs: `background`) runs at the
# lowest CPU priority, so that a timed run gets a core the moment it wants one:
# the CPU paces a GPU lab's timed calls (the checker's requests, the runner's
# launches, the read-back), and a run that waits for a core measures the wait:
# with every core busy at equal priority, reference solutions measured below
# their thresholds (see docs/decisions.md, "Untimed work runs at a lower
# priority"). Two knobs, since either may be the one
# in force: the process's nice value, which the scheduler weighs between
# processes of one CPU group, and its session's autogroup's (sched(7)), which
# is what it weighs between sessions where the kernel groups by session (a
# machine's root cgroup with autogroup on), and every run here has a session of
# its own. Lowering needs no privilege; raising does, which is why a timed run
# cannot be raised instead. The kernel takes an autogroup's new nice value ten
# times a second at most, machine-wide, from a process without CAP_SYS_ADMIN
# (a grader not root, and anything in a sandbox's user namespace), counting
# every write, a privileged one too (sched/autogroup.c), so each run
# tries twice, 0.1 s apart (a busy batch starts a few such programs a second,
# under the kernel's ten); one refused
# twice keeps its nice value only, which is all that counts
# where autogroups are off or the grader runs in a cgroup of its own. So does a
# sandboxed runner, which bwrap starts in a session of its own, beyond the
# shell's reach (a sandboxed build lowers its autogroup inside: sandbox_build).
BACKGROUND_NICE = 19


@functools.lru_cache(maxsize=1)
def _nice_binary() -> str | None:
    return shutil.which("nice") or next(
        (p for p in ("/usr/bin/nice", "/bin/nice") if os.access(p, os.X_OK)), None
    )


def background_command(args: list[str], nice_value: bool = True, tries: int = 2) -> list[str]:
    """args, started at the lowest priority (BACKGROUND_NICE says why): its
    session's autogroup lowered, where the kernel has one (up to `tries` times,
    0.1 s apart, should the kernel refuse: ten a second at most), then
    (nice_value) its own nice value. Without nice(1) only the autogroup is
    lowered."""
    nice = _nice_binary() if nice_value else None
    write = f"echo {BACKGROUND_NICE} > /proc/self/autogroup 2>/dev/null"
    lower = (
        f"[ -e /proc/self/autogroup ] && for t in {' '.join(map(str, range(1, tries + 1)))}; "
        f"do {write} && break; [ $t = {tries} ] || sleep 0.1; done; exec "
    )
    lower += f'{nice} -n {BACKGROUND_NICE} "$@"' if nice else '"$@"'
    return ["/bin/sh", "-c", lower, "sh", *args]


def _must_exist(program: str, path: str | None) -> None:
    """Raises as Popen would for a program that is not there: behind the shell
    of background_command, a missing compiler would otherwise read as a build
    that failed (exit 127), which a batch would put on the student."""
    if "/" in program and not os.path.isabs(program):
        return  # relative to the run's cwd: Popen's to judge
    if shutil.which(program, path=path) is None:
        raise FileNotFoundError(2, "No such file or directory", program)


@dataclass(frozen=True)
class RunOptions:
    """The settings of run() that few callers change. output_limit: bytes of
    output past which the process group is killed. tail: bytes of output
    returned, the last ones (the first, with head: a compiler's first errors
    matter most). log: where the output is kept (default: a temporary file,
    removed). stdin_text: written to the process's stdin (default: none).
    pass_fds: descriptors the process inherits. on_start: called once the
    process exists. paused: seconds so far that do not count against the
    timeout (a checker waiting for its GPU slot)."""

    output_limit: int = 64 << 20
    tail: int = 20000
    head: bool = False
    log: Path | None = None
    stdin_text: str | None = None
    pass_fds: tuple[int, ...] = ()
    on_start: Callable[[], None] | None = None
    paused: Callable[[], float] | None = None


def run(
    args: list[str],
    *,
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    background: bool = False,
    options: RunOptions = RunOptions(),
) -> Finished:
    """Runs args to the end, or kills its process group at `timeout` seconds
    or once it has written more than `options.output_limit` bytes, and returns
    how it ended with the tail of its output (RunOptions: what else a caller
    can set). background: at the lowest CPU priority, below any timed run
    (BACKGROUND_NICE)."""
    o = options
    if background:
        _must_exist(args[0], (env if env is not None else os.environ).get("PATH"))
    started = time.monotonic()
    with open(o.log, "w+b") if o.log else tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            background_command(args) if background else args,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if o.stdin_text is not None else subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=o.pass_fds,
        )
        track(proc.pid)
        try:
            if o.on_start is not None:
                o.on_start()
            timed_out, over = _wait(
                proc,
                out,
                started + timeout,
                o.stdin_text,
                o.output_limit,
                o.paused or (lambda: 0.0),
            )
        finally:
            # A clean exit, a timeout, or an exception here (Ctrl-C, SIGTERM): the
            # group may hold stragglers (a daemonised child); none outlives run().
            kill_tree(proc)
            untrack(proc.pid)
        size = out.seek(0, os.SEEK_END)
        out.seek(0 if o.head else max(0, size - o.tail))
        text = out.read(o.tail).decode(errors="replace")
    return Finished(
        None if timed_out else proc.returncode, timed_out, over, text, time.monotonic() - started
    )


def _wait(
    proc: subprocess.Popen,
    out,
    deadline: float,
    stdin_text: str | None,
    output_limit: int,
    paused: Callable[[], float],
) -> tuple[bool, bool]:
    """Waits for proc; kills its group at the deadline (moved on by what
    `paused` says) or past the output cap."""
    if stdin_text is not None:
        if proc.stdin is None:
            raise ValueError("stdin_text needs a process started with stdin=PIPE")
        try:
            proc.stdin.write(stdin_text.encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
    timed_out = over = False
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        timed_out, over = past_limits(out, deadline, paused, output_limit)
        if timed_out or over:
            kill_tree(proc)
            break
    return timed_out, over


def past_limits(
    out, deadline: float, paused: Callable[[], float], output_limit: int
) -> tuple[bool, bool]:
    """Has a run passed its deadline (moved on by what `paused` says), and has
    its output file `out` passed output_limit bytes? (a kept checker's run too:
    checker_service.py)"""
    return time.monotonic() > deadline + paused(), os.fstat(out.fileno()).st_size > output_limit
