"""Checkers kept across a batch worker's untimed runs (checker --serve,
tests/support/checker_serve.hpp): one process, and one CUDA context, for all
the runs of one checker binary in one environment, where each run started a
checker of its own.

Why: the machine serves a process's start and its CUDA context one at a time
with every other's (see docs/decisions.md, "Fewer process starts"). A failing GPU lab started
two contexts and a correct one seven; with a kept checker, one and six.

What a run sees is what a checker of its own gave it: its arguments, its
result file and admission pipes (sent with the request, SCM_RIGHTS), its
output in a file of its own, its time and output limits (a run past either
kills the kept checker with everything it started, as proc.run kills a
checker's group), its exit code. A checker that ends during a run (a lost
context's abort, a kill) is that run's ending, read as proc.run reads one,
and the next run starts a new checker. Between runs the checker has stopped
the runner, killed whatever it left behind and freed every buffer the runner
mapped; where something of the lab's code outlived its runner, or its own
context is lost, it answers the run and exits instead of serving another.

Untimed runs (proc.BACKGROUND_NICE, like every untimed checker) go to a kept
checker in a thread inside kept() (a batch worker's grading loop). Timed runs
go to one only in a thread inside borrowing(pool) (batch --keep-timed-checkers:
a GPU's timed turns, one at a time, each part in a thread of its own, borrow
from the GPU's Pool), at the CPU's normal priority. `grade` keeps nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import select
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ...infra import proc
from ...infra.trace import trace

_local = threading.local()

_ANSWER = struct.Struct("ii")  # the run's exit code; 1 when it serves another


@contextlib.contextmanager
def kept(most: int | None = None) -> Iterator[None]:
    """Within it, this thread's untimed checker runs go to kept checkers
    (serving): at most `most` at once (None: one a binary; 0: none), the one
    used least lately ended for a new one (a batch keeps them in the GPU memory
    its run slots leave: gpus.kept_checkers_each). They end when it is left."""
    services: dict[str, Service] = {}
    _local.services = services if most != 0 else None
    _local.most = most
    try:
        yield
    finally:
        _local.services = None
        for service in services.values():
            service.close()


@contextlib.contextmanager
def borrowing(pool: Pool | None) -> Iterator[None]:
    """Within it, this thread's timed checker runs borrow from `pool` (None: none do)."""
    before = borrowed_from()
    _local.pool = pool
    try:
        yield
    finally:
        _local.pool = before


@contextlib.contextmanager
def for_run(checker: str, env: dict[str, str], background: bool) -> Iterator[Service | None]:
    """The kept checker a run of `checker` in `env` goes to, for the run's
    length: this thread's own (kept) for an untimed run, one borrowed from its
    pool (borrowing) for a timed one, or None: a checker of its own."""
    if background:
        yield serving(checker, env)
        return
    pool = borrowed_from()
    if pool is None:
        yield None
        return
    with pool.lend(checker, env) as service:
        yield service


def borrowed_from() -> Pool | None:
    """The pool this thread's timed checker runs borrow from, if any."""
    return getattr(_local, "pool", None)


def keeping() -> bool:
    """Whether this thread's untimed checker runs go to kept checkers."""
    return getattr(_local, "services", None) is not None


def serving(checker: str, env: dict[str, str]) -> Service | None:
    """The kept checker for a run of `checker` in `env`, started now if none
    serves (or the binary or the environment changed); None outside kept()."""
    services: dict[str, Service] | None = getattr(_local, "services", None)
    if services is None:
        return None
    st = os.stat(checker)
    key = (st.st_ino, st.st_mtime_ns, tuple(sorted(env.items())))
    service = services.pop(checker, None)  # put back last: the one used latest
    if service is not None and (service.key != key or not service.ready):
        service.close()
        service = None
    if service is None:
        most = getattr(_local, "most", None)
        while most is not None and services and len(services) >= most:
            services.pop(next(iter(services))).close()  # the one used least lately
        service = Service(checker, env, key)
    services[checker] = service
    return service


def serving_now() -> list[Service]:
    """This thread's kept checkers that may serve another run."""
    services: dict[str, Service] = getattr(_local, "services", None) or {}
    return [s for s in services.values() if s.ready]


@functools.lru_cache(maxsize=64)
def _digest(path: str, inode: int, mtime_ns: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class Pool:
    """Kept checkers lent to one run at a time, to any thread borrowing from
    it: a GPU's timed turns (one turn at a time, Gate.timed_turn), whose parts
    run at once, each in a thread of its own, so at most as many of a kind as
    a turn has parts of it. The workers' checkers are the same program built in
    each worker's tree: a checker serves runs of any binary with its contents
    (the same bytes) and environment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: dict[tuple, list[Service]] = {}
        self._closed = False

    @contextlib.contextmanager
    def lend(self, checker: str, env: dict[str, str]) -> Iterator[Service]:
        st = os.stat(checker)
        key = (_digest(checker, st.st_ino, st.st_mtime_ns), tuple(sorted(env.items())))
        with self._lock:
            free: list[Service] = []
            dead: list[Service] = []
            for kept_one in self._free.get(key, []):  # each judged once: it may end meanwhile
                (free if kept_one.ready else dead).append(kept_one)
            service = free.pop() if free else None
            self._free[key] = free
        for gone in dead:
            gone.close()
        if service is None:
            service = Service(checker, env, key, background=False)
        try:
            yield service
        finally:
            with self._lock:
                keep = service.ready and not self._closed
                if keep:
                    self._free[key].append(service)
            if not keep:
                service.close()

    def close(self) -> None:
        """Ends every checker not lent now (a lent one ends when it comes back)."""
        with self._lock:
            self._closed = True
            free = [s for group in self._free.values() for s in group]
            self._free.clear()
        for service in free:
            service.close()


class Service:
    """One kept checker process and its socket."""

    def __init__(
        self, checker: str, env: dict[str, str], key: tuple, background: bool = True
    ) -> None:
        self.checker = checker
        self.key = key
        self.usable = True
        self.runs = 0
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile()  # what it writes outside any run
        command = [checker, f"--serve={theirs.fileno()}"]
        try:
            self._proc = subprocess.Popen(
                command if not background else proc.background_command(command),
                env=env,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            self._log.close()
            raise
        finally:
            theirs.close()
        proc.track(self._proc.pid)
        self._sock = ours

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def ready(self) -> bool:
        """May it serve another run? Not once it said no, or ended (between
        runs, by another's hand: the next run gets a new one, and this end is
        nobody's result)."""
        return self.usable and self._proc.poll() is None

    def run(
        self,
        args: list[str],
        fds: tuple[int, ...],
        *,
        timeout: float,
        output_limit: int,
        tail: int,
        on_start: Callable[[], None] | None,
        paused: Callable[[], float] | None,
    ) -> proc.Finished:
        """One run: `args` as the checker's command line would have them but
        the program, --result-fd and --admission-fds; `fds` the result file's
        descriptor, then READY and GO when it has them. As proc.run: on_start
        once the checker has them, `paused` seconds not counted."""
        started = time.monotonic()
        self.runs += 1
        with tempfile.TemporaryFile() as out:
            with contextlib.suppress(OSError):  # it has ended: how is read below
                socket.send_fds(
                    self._sock, ["\0".join(args).encode() + b"\0"], [out.fileno(), *fds]
                )
            if on_start is not None:
                on_start()
            code, timed_out, over, ended = self._wait(
                out, started + timeout, output_limit, paused or (lambda: 0.0)
            )
            # What it said outside any run (a SKIP: no GPU) belongs to the run it ended.
            before = self._log_text() if ended else ""
            if not self.usable:
                self.close()
            size = out.seek(0, os.SEEK_END)
            out.seek(max(0, size - tail))
            text = before + out.read(tail).decode(errors="replace")
        return proc.Finished(code, timed_out, over, text, time.monotonic() - started)

    def _wait(
        self, out, deadline: float, output_limit: int, paused: Callable[[], float]
    ) -> tuple[int | None, bool, bool, bool]:
        """The run's exit code (None when it ran out of time), whether it ran
        out of time, whether it wrote too much (the checker killed for either),
        whether the checker ended by itself during the run."""
        while True:
            ready, _, _ = select.select([self._sock], [], [], 0.05)
            if ready:
                try:
                    said = self._sock.recv(_ANSWER.size)
                except OSError:
                    said = b""
                if len(said) == _ANSWER.size:
                    code, more = _ANSWER.unpack(said)
                    self.usable = bool(more)
                    return code, False, False, False
                self.usable = False  # it ended during the run: its exit is the run's
                return self._proc.wait(), False, False, True
            timed_out, over = proc.past_limits(out, deadline, paused, output_limit)
            if timed_out or over:
                self.usable = False
                proc.kill_tree(self._proc)
                return (None if timed_out else self._proc.returncode), timed_out, over, False

    def _log_text(self) -> str:
        self._log.seek(0)
        return self._log.read(4000).decode(errors="replace")

    def close(self) -> None:
        """Ends the checker: asked (its socket closed), then killed with
        everything it started; idempotent."""
        if self._sock.fileno() >= 0:
            self._sock.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=10)
            proc.kill_tree(self._proc)
            proc.untrack(self._proc.pid)
            trace(f"kept {os.path.basename(self.checker)} ended after {self.runs} run(s)")
        self.usable = False
        if not self._log.closed:
            self._log.close()
