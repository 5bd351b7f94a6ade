"""Which programs a batch's CPU time goes to: a study beside throughput.py.

A class batch keeps its cores far busier than its GPU: the cores, not the
GPU, bind it (docs/decisions.md, "A batch's rate is bound by the host, not
its GPUs"). Which of the batch's programs spend them (the compiler's
stages, compute-sanitizer, the checkers and runners, the grader's Python)
is what a change must cut, and what /proc/stat's one total cannot say.

Every `every` seconds this reads each process's own CPU time (utime and
stime of /proc/PID/stat, in clock ticks) and adds what it grew since the last
read to its command's name (comm: the first 15 bytes of the program's name).
A process is known by its PID and start time, so a reused PID is a new
process; one alive at the first read counts only what it spends after. A process that starts and ends between two reads is never seen (the
compiler's stages last a fraction of a second), and one that ends loses what
it spent after its last read; both reach their parent's cutime and cstime
when it reaps them. So what a parent's reaped children grew by, less what the
children that ended were last seen at, counts as "reaped by PARENT". What no
name holds (a parent that ended too, or never was seen) is what `covered`
leaves out: the names' share of the busy CPU time of the cores this process
may use (/proc/stat, the same span).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from grader.infra import cpu_busy

TICKS = os.sysconf("SC_CLK_TCK")


Process = tuple[str, int, int, int]  # comm, own ticks, reaped children's ticks, parent's PID


def read_processes(proc: Path = Path("/proc")) -> dict[tuple[int, int], Process]:
    """(pid, start time) -> (comm, own CPU ticks, reaped children's CPU ticks,
    parent's PID) of every process readable now."""
    seen: dict[tuple[int, int], Process] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            text = (proc / entry.name / "stat").read_text()
        except OSError:
            continue  # ended between the listing and the read
        # comm is in parentheses and may hold spaces or ')': the fields
        # after it start at the last ')'.
        left, right = text.find("("), text.rfind(")")
        if left < 0 or right < left:
            continue
        fields = text[right + 2 :].split()
        if len(fields) < 20:
            continue
        # After comm: state(0) ppid(1) ... utime(11) stime(12) cutime(13)
        # cstime(14) ... starttime(19).
        seen[(int(entry.name), int(fields[19]))] = (
            text[left + 1 : right],
            int(fields[11]) + int(fields[12]),
            int(fields[13]) + int(fields[14]),
            int(fields[1]),
        )
    return seen


def grown(
    before: dict[tuple[int, int], Process],
    now: dict[tuple[int, int], Process],
) -> dict[str, int]:
    """Ticks each command spent between two reads. A process new at `now`
    counts all its ticks: it started after `before`. A parent's reaped children's growth, less the last seen totals of its
    children that ended, counts as "reaped by PARENT"."""
    spent: dict[str, int] = {}

    def add(comm: str, ticks: int) -> None:
        if ticks > 0:
            spent[comm] = spent.get(comm, 0) + ticks

    # What was seen of each process that ended since `before`: its last own
    # and reaped ticks, and what was seen of its children that ended in the
    # same span (a wrapper and the program it ran, both gone: the program's
    # ticks reached the wrapper's reaped ticks after its last read).
    ended = {key: proc for key, proc in before.items() if key not in now}
    children_of: dict[int, list[tuple[int, int]]] = {}
    for key, proc in ended.items():
        children_of.setdefault(proc[3], []).append(key)

    def seen_of(key: tuple[int, int]) -> int:
        _, own, children, _ = ended[key]
        return own + children + sum(seen_of(k) for k in children_of.get(key[0], ()) if k != key)

    ended_totals = {pid: sum(seen_of(k) for k in keys) for pid, keys in children_of.items()}
    for key, (comm, own, children, _) in now.items():
        old = before.get(key)
        if old:
            add(comm, own - old[1])
            add(f"reaped by {comm}", children - old[2] - ended_totals.get(key[0], 0))
        else:
            add(comm, own)
            add(f"reaped by {comm}", children - ended_totals.get(key[0], 0))
    return spent


def busy_ticks(cores: set[int], stat: Path = Path("/proc/stat")) -> int:
    """Busy ticks so far of `cores`: all but idle and iowait (the grader's
    own reading of /proc/stat, grader/infra/cpu_busy.py)."""
    fields = cpu_busy.stat(cores, str(stat))
    return sum(fields) - fields[3] - fields[4] if len(fields) >= 5 else 0


class Periodic:
    """A thread of its own that calls first(), then sample() every `every`
    seconds until stop(): each sample goes to `samples` and, as a line of
    JSON, to `path` as it is taken, so that a run cut before its end keeps
    them (a run cut by the device's time limit loses whatever it held only in
    memory). throughput.py's samplers."""

    def __init__(self, every: float, path: Path | None = None) -> None:
        self.every, self.path = every, path
        self.samples: list[dict] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)

    def first(self) -> None:
        """What the first sample is measured from."""

    def sample(self) -> dict:
        raise NotImplementedError

    def _run(self) -> None:
        self.first()
        with open(self.path or os.devnull, "a") as out:
            while not self._done.wait(self.every):
                taken = self.sample()
                self.samples.append(taken)
                out.write(json.dumps(taken) + "\n")
                out.flush()


class CommandCpu(Periodic):
    """Each sample: `t` (seconds since `started`), `busy` (the busy ticks of
    the cores this process may use since the sample before) and `spent`
    ({comm: ticks})."""

    def __init__(
        self,
        started: float,
        path: Path | None = None,
        every: float = 0.2,
        proc: Path = Path("/proc"),
    ) -> None:
        super().__init__(every, path)
        self.started, self.proc = started, proc
        self.cores = set(os.sched_getaffinity(0))

    def first(self) -> None:
        # What the processes alive now spent before is not counted.
        self._last = read_processes(self.proc)
        self._last_busy = busy_ticks(self.cores, self.proc / "stat")

    def sample(self) -> dict:
        now, busy = read_processes(self.proc), busy_ticks(self.cores, self.proc / "stat")
        taken = {
            "t": round(time.time() - self.started, 2),
            "busy": busy - self._last_busy,
            "spent": grown(self._last, now),
        }
        self._last, self._last_busy = now, busy
        return taken


def load(path: Path) -> list[dict]:
    """The samples a Periodic wrote to `path` (a last line cut short skipped)."""
    samples = []
    for line in path.read_text().splitlines():
        try:
            samples.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return samples


def by_command(samples: list[dict], span: dict | None, most: int = 15) -> dict | None:
    """Core-seconds per command over the span (throughput.py's steady span:
    `from` and `to`), the `most` largest and the rest summed as "other";
    `covered`: their sum over the busy ticks of the cores over the same span."""
    if not span:
        return None
    summed: dict[str, int] = {}
    busy = 0
    for sample in samples:
        if span["from"] <= sample["t"] <= span["to"]:
            busy += sample["busy"]
            for comm, ticks in sample["spent"].items():
                summed[comm] = summed.get(comm, 0) + ticks
    ranked = sorted(summed.items(), key=lambda kv: -kv[1])
    seconds = {comm: round(ticks / TICKS, 1) for comm, ticks in ranked[:most]}
    rest = sum(ticks for _, ticks in ranked[most:])
    if rest:
        seconds["other"] = round(rest / TICKS, 1)
    total = sum(summed.values())
    result: dict = {"core_seconds": round(total / TICKS, 1), "commands": seconds}
    if busy:
        result["covered"] = round(total / busy, 3)
    return result
