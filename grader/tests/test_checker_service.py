"""Checkers kept across a worker's untimed runs (grader/engine/checker_service.py),
with a stand-in checker that speaks checker --serve's protocol: each run gets its
own output and result file, a kept checker serves the next run only when it
said it would, and a checker that ended, ran out of time or wrote too much
is never the next run's, which gets a new one. tests/serve_check.py runs the
real checker the same way."""

import os
import stat
import textwrap
from pathlib import Path

from grader.engine import checker_service
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
    done, stream = launch(
        [checker, f"--lab={lab}"],
        timeout=timeout,
        env=dict(os.environ, **(env or {})),
        log_limit=log_limit,
        admit=None,
        background=True,
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
