"""What a batch checks before it starts: room on the disks, and no other batch
writing to the same output folder; and how its main thread runs the workers'
threads and takes Ctrl-C and SIGTERM meanwhile."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..infra import proc, toolchain
from ..infra.trace import trace
from .config import Interrupted

# A worker's build tree for every lab is about 300 MB (sm_90); student folders,
# reports and the compiler's temporary files need more beside it.
MIN_FREE_OUT = 1 << 30
MIN_FREE_TMP = 512 << 20


def tools_tmpdir() -> Path:
    """The folder the compilers keep their temporary files in: $TMPDIR where
    it is set, else /tmp. nvcc takes TMPDIR as it is and fails where it cannot
    write there; Python's tempfile.gettempdir() is not this folder, as it
    falls back to /tmp where TMPDIR is unwritable or full, so that a check of
    it would measure a disk the compilers never use."""
    return Path(os.environ.get("TMPDIR") or "/tmp")


def check_tmpdir() -> Path:
    """tools_tmpdir(), refused in one line where it does not exist or cannot
    be written: every build and check of the batch would fail in it."""
    where = tools_tmpdir()
    named = f"TMPDIR={where}" if os.environ.get("TMPDIR") else f"{where} (TMPDIR is not set)"
    if not where.is_dir():
        raise toolchain.SetupError(
            f"{named} is not a folder that exists: the compilers keep their temporary "
            "files there; create it, or set TMPDIR to a folder you can write"
        )
    try:
        with tempfile.TemporaryFile(dir=where) as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
    except OSError as e:
        raise toolchain.SetupError(
            f"cannot write in {named} ({e.strerror}): the compilers keep their temporary "
            "files there; set TMPDIR to a folder you can write"
        ) from None
    return where


def check_space(out: Path) -> None:
    """A nearly full disk fails builds in ways that read as the student's
    ("nvcc cannot compile programs"): refuse to start instead, in one line.
    The temporary folders measured are the compilers' (tools_tmpdir) and the
    grader's own (tempfile's, where it differs)."""
    tmp = {check_tmpdir(), Path(tempfile.gettempdir())}
    for where, need in ((out, MIN_FREE_OUT), *((t, MIN_FREE_TMP) for t in sorted(tmp))):
        try:
            free = shutil.disk_usage(where).free
        except OSError as e:
            raise toolchain.SetupError(f"cannot use {where}: {e.strerror}") from None
        if free < need:
            raise toolchain.SetupError(
                f"{where} has {free >> 20} MB free; a batch needs at least "
                f"{need >> 20} MB there: free some space, or use another "
                "--out or TMPDIR"
            )


class OutLock:
    """One batch per output folder at a time."""

    def __init__(self, out: Path):
        try:
            out.mkdir(parents=True, exist_ok=True)
            self.file = open(out / ".batch.lock", "a")
        except OSError as e:
            raise toolchain.SetupError(
                f"cannot use {out} for the batch's output: {e.strerror}"
            ) from None
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            raise toolchain.SetupError(
                f"another batch is writing to {out}: wait for it, or give this one another --out"
            ) from None

    def release(self) -> None:
        self.file.close()


@contextlib.contextmanager
def signals_noted():
    """Ctrl-C (SIGINT) and SIGTERM only noted, in the yielded list, while the
    main thread waits for the workers; it acts on them between its waits.
    Raised where they land, they can land inside threading's own locking: an
    exception in Event.wait can leave the event's lock released or held
    (CPython issue 118433), and a worker that then sets the event fails or
    waits for ever: the likely cause of a batch that once did not stop within
    60 s of Ctrl-C (grader/tests/test_batch_faults.py, seen once in 21 runs and
    not again). A second signal while the batch stops
    is noted too, and cannot cut its killing short. Outside the main thread,
    which alone receives signals, nothing changes."""
    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return

    def note(signum, frame):
        noted.append(signum)

    previous = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield noted
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_workers(named: list[tuple[str, Callable[[], None]]], stop: threading.Event) -> None:
    """Each of `named` in a thread of that name (trace lines name it), until
    every one has returned. On Ctrl-C or SIGTERM (Interrupted): `stop` is set,
    so no new student starts; every process the workers have alive is killed,
    their temporary folders are removed as they unwind, and the exception is
    raised once every thread is done.

    The main thread polls the threads' events, not Thread.join: a join
    interrupted by a signal handler's exception marks a running thread as
    stopped (CPython 3.11, bpo-45274); and it takes signals as notes
    (signals_noted), not where they land."""
    finished = [threading.Event() for _ in named]

    def run(target: Callable[[], None], done: threading.Event) -> None:
        try:
            target()
        finally:
            done.set()

    threads = [
        threading.Thread(target=run, args=(target, event), name=name)
        for (name, target), event in zip(named, finished)
    ]
    for t in threads:
        t.start()
    with signals_noted() as noted:
        try:
            while not all(event.is_set() for event in finished):
                if noted:
                    sig = noted[0]
                    raise KeyboardInterrupt() if sig == signal.SIGINT else Interrupted(sig)
                time.sleep(0.1)
        except BaseException:
            stop.set()
            trace("interrupted")  # throughput.py counts the labs graded before this line
            # A process started since the last round dies within 0.1 s, however
            # many workers there are (docs/decisions.md, "An interrupted batch
            # kills its processes every 0.1 s").
            while not all(event.is_set() for event in finished):
                proc.kill_all()
                time.sleep(0.1)
            raise
    for t in threads:
        t.join()
