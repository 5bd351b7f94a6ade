"""Checkers kept across a worker's untimed runs (grader/engine/sharing/checker_service.py),
with a stand-in checker that speaks checker --serve's protocol: each run gets its
own output and result file, a kept checker serves the next run only when it
said it would, and a checker that ended, ran out of time or wrote too much
is never the next run's, which gets a new one. tests/serve_check.py runs the
real checker the same way."""

import os
import shutil
import stat
import textwrap
import threading
import time
from pathlib import Path

from grader.engine.sharing import checker_service
from grader.engine.checker_run import launch

# A run's --lab says what the stand-in does with it.
CHECKER = """
import json, os, socket, struct, sys, time
print("started", os.getpid(), flush=True)
if os.environ.get("NO_GPU"):
    print("SKIP (labs): no usable CUDA GPU", flush=True)
    sys.exit(77)
sock = socket.socket(fileno=int(sys.argv[1].split("=")[1]))
while True:
    msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
    if not msg:
        sys.exit(0)
    args = [a.decode() for a in msg.split(b"\\0") if a]
    lab = next(a.split("=", 1)[1] for a in args if a.startswith("--lab="))
    os.dup2(fds[0], 1)
    with os.fdopen(fds[1], "w") as results:
        results.write(json.dumps({"event": "run", "seed": str(os.getpid())}) + "\\n")
        print(f"run {lab} in {os.getpid()}", flush=True)
        if lab == "dies":
            os._exit(3)
        if lab == "hangs":
            time.sleep(60)
        if lab == "noisy":
            print("x" * 100000, flush=True)
            time.sleep(60)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.close(fds[0])
    sock.send(struct.pack("ii", 0, 0 if lab == "last" else 1))
"""


def stand_in(tmp_path: Path) -> str:
    path = tmp_path / "checker"
    path.write_text("#!/usr/bin/env python3\n" + textwrap.dedent(CHECKER))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def run(checker: str, lab: str, env=None, timeout: float = 20, log_limit: int = 1 << 20):
    """A run of `checker` (untimed, unless a pool is borrowed from: timed)."""
    done, stream = launch(
        [checker, f"--lab={lab}"],
        timeout=timeout,
        env=dict(os.environ, **(env or {})),
        log_limit=log_limit,
        admit=None,
        background=checker_service.borrowed_from() is None,
    )
    return done, stream


def pid_of(stream: str) -> int:
    return int(stream.split('"seed": "')[1].split('"')[0])


def test_runs_share_one_checker_each_with_its_own_output_and_results(tmp_path):
    checker = stand_in(tmp_path)
    with checker_service.kept():
        first, one = run(checker, "a")
        second, two = run(checker, "b")
        assert len(checker_service.serving_now()) == 1
    assert first.code == 0 and second.code == 0
    assert pid_of(one) == pid_of(two)
    assert first.output.strip() == f"run a in {pid_of(one)}"  # not the other run's, nor "started"
    assert second.output.strip() == f"run b in {pid_of(two)}"
    assert one.count('"event"') == 1 and two.count('"event"') == 1


def test_outside_kept_every_run_has_a_checker_of_its_own(tmp_path):
    checker = stand_in(tmp_path)
    assert not checker_service.keeping()
    assert checker_service.serving(checker, dict(os.environ)) is None


def test_a_checker_that_ends_in_a_run_is_that_runs_ending_and_the_next_gets_a_new_one(tmp_path):
    checker = stand_in(tmp_path)
    with checker_service.kept():
        _, before = run(checker, "a")
        died, _ = run(checker, "dies")
        after, stream = run(checker, "a")
    assert died.code == 3 and not died.timed_out
    assert "started" in died.output  # what it said outside any run belongs to the run it ended
    assert after.code == 0 and pid_of(stream) != pid_of(before)


def test_a_checker_that_says_it_serves_no_more_is_not_asked_again(tmp_path):
    checker = stand_in(tmp_path)
    with checker_service.kept():
        _, last = run(checker, "last")
        assert checker_service.serving_now() == []
        done, stream = run(checker, "a")
    assert done.code == 0 and pid_of(stream) != pid_of(last)


def test_a_run_past_its_time_or_output_limit_kills_the_checker(tmp_path):
    checker = stand_in(tmp_path)
    with checker_service.kept():
        _, before = run(checker, "a")
        killed = checker_service.serving_now()[0].pid
        hung, _ = run(checker, "hangs", timeout=1)
        assert not os.path.exists(f"/proc/{killed}") or _zombie(killed)
        _, middle = run(checker, "a")
        noisy, _ = run(checker, "noisy", log_limit=10000)
        after, stream = run(checker, "a")
    assert hung.timed_out and hung.code is None
    assert noisy.over_limit and not noisy.timed_out
    assert len({pid_of(before), pid_of(middle), pid_of(stream)}) == 3
    assert after.code == 0


def test_a_checker_that_finds_no_gpu_reports_it_to_the_run(tmp_path):
    checker = stand_in(tmp_path)
    with checker_service.kept():
        done, _ = run(checker, "a", env={"NO_GPU": "1"})
    assert done.code == 77 and "SKIP (labs): no usable CUDA GPU" in done.output


def test_leaving_kept_ends_every_kept_checker(tmp_path):
    checker = stand_in(tmp_path)
    with checker_service.kept():
        run(checker, "a")
        pid = checker_service.serving_now()[0].pid
    assert not os.path.exists(f"/proc/{pid}") or _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat_line[stat_line.rfind(")") + 2] == "Z"


def test_a_pool_lends_a_checker_to_one_run_at_a_time_and_keeps_it_for_the_next(tmp_path):
    checker = stand_in(tmp_path)
    twin = tmp_path / "twin"  # another worker's build of the same program
    shutil.copy2(checker, twin)
    other = tmp_path / "other"  # a program with other bytes
    other.write_text(Path(checker).read_text() + "# changed\n")
    other.chmod(0o755)
    env = dict(os.environ)
    pool = checker_service.Pool()
    held = threading.Event()
    release = threading.Event()
    pids: dict[str, int] = {}

    def hold() -> None:
        with pool.lend(checker, env) as service:
            pids["held"] = service.pid
            held.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(10)
    with pool.lend(str(twin), env) as service:  # the first is lent: another starts
        pids["beside"] = service.pid
    release.set()
    t.join()
    with pool.lend(str(twin), env) as service:  # both free now: one of them again
        pids["again"] = service.pid
    with pool.lend(str(other), env) as service:
        pids["other"] = service.pid
    with checker_service.borrowing(pool):
        done, stream = run(checker, "a")  # a timed run: launch(background=False)
    assert done.code == 0 and pid_of(stream) in (pids["held"], pids["beside"])
    pool.close()
    assert pids["held"] != pids["beside"]
    assert pids["again"] in (pids["held"], pids["beside"])
    assert pids["other"] not in (pids["held"], pids["beside"])
    for pid in pids.values():
        assert not os.path.exists(f"/proc/{pid}") or _zombie(pid)


def test_a_checker_lent_when_the_pool_closes_ends_when_it_comes_back(tmp_path):
    checker = stand_in(tmp_path)
    pool = checker_service.Pool()
    with pool.lend(checker, dict(os.environ)) as service:
        pool.close()
        assert os.path.exists(f"/proc/{service.pid}") and not _zombie(service.pid)
    assert not os.path.exists(f"/proc/{service.pid}") or _zombie(service.pid)


def test_the_last_worker_of_a_gpu_to_leave_ends_its_timed_checkers(tmp_path):
    from grader.batch.gpu_group import GpuGroup

    assert GpuGroup(2, shared=True).timed_checkers is None  # not asked for
    assert GpuGroup(2, shared=False, keep_timed=True).timed_checkers is None  # no turns
    group = GpuGroup(2, shared=True, keep_timed=True)
    assert group.timed_checkers is not None
    with group.timed_checkers.lend(stand_in(tmp_path), dict(os.environ)) as service:
        pid = service.pid
    assert not group.leave()
    assert os.path.exists(f"/proc/{pid}") and not _zombie(pid)
    assert group.leave()
    assert not os.path.exists(f"/proc/{pid}") or _zombie(pid)


def test_a_thread_keeps_at_most_as_many_as_it_is_told_ending_the_one_used_least_lately(tmp_path):
    names = []
    for name in ("sum", "max", "float"):
        (tmp_path / name).mkdir()
        names.append(stand_in(tmp_path / name))
    total, used_max, used_float = names
    with checker_service.kept(2):
        run(total, "a")
        run(used_max, "a")
        run(total, "a")  # now max is the one used least lately
        first = {s.checker: s.pid for s in checker_service.serving_now()}
        run(used_float, "a")
        now = {s.checker: s.pid for s in checker_service.serving_now()}
    assert set(first) == {total, used_max}
    assert set(now) == {total, used_float} and now[total] == first[total]
    assert not os.path.exists(f"/proc/{first[used_max]}") or _zombie(first[used_max])


def test_idle_checkers_keep_to_the_memory_the_run_slots_leave():
    from grader.batch.gpu_group import POOL_CHECKERS, GpuGroup
    from grader.infra import gpus

    def gpu(gib: float) -> gpus.Gpu:
        return gpus.Gpu(0, "GPU-x", "0", "test", 0, int(gib * 1024))

    h200 = gpu(140.4)  # 4 slots of 20 GiB leave 60.4 GiB: 3 GiB for each of 16 workers
    assert gpus.kept_checkers_each(h200, 16, 4) == 3
    assert GpuGroup(16, True, 4, False, h200).kept_each == 3
    assert (
        GpuGroup(16, True, 4, True, h200).kept_each
        == (60 - POOL_CHECKERS * gpus.KEPT_CHECKER_GIB) // 16
    )
    h100 = gpu(79.6)  # 3 slots leave 19.6 GiB: 1 each
    assert GpuGroup(16, True, 3, True, h100).kept_each == 0  # the pool takes 10 of them
    assert GpuGroup(16, True, 3, False, h100).kept_each == 1
    small = gpu(40)  # 2 slots leave nothing: no kept checker, and no pool
    group = GpuGroup(8, True, 2, True, small)
    assert group.kept_each == 0 and group.timed_checkers is None
    assert GpuGroup(2, True).kept_each is None  # no GPU's memory to share (lab 01)


def test_a_pools_checker_that_ended_between_runs_is_ended_for_good_and_replaced(tmp_path):
    import signal

    checker = stand_in(tmp_path)
    pool = checker_service.Pool()
    with pool.lend(checker, dict(os.environ)) as first:
        pass
    os.kill(first.pid, signal.SIGKILL)  # by another's hand, while it waits
    while not _zombie(first.pid):  # dead, not yet reaped
        time.sleep(0.01)
    with pool.lend(checker, dict(os.environ)) as second:
        assert second is not first
    pool.close()
    assert not first.usable  # closed: its socket and log let go, no longer tracked
