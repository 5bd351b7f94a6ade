"""tests/submissions/cpu_by_command.py: the core-seconds each program of a
batch spent, read from /proc (here a made-up one), and throughput.py's
utilisation of the GPUs CUDA_VISIBLE_DEVICES leaves."""

import json
import subprocess
import sys

from grader.tests.test_throughput import SCRIPT, _throughput


def _c():
    return _throughput().cpu_by_command  # the module throughput.py imports


def _stat(pid, comm, utime, stime, start):
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime
    return f"{pid} ({comm}) S 4 1 1 0 -1 0 0 0 0 0 {utime} {stime} 7 6 20 0 1 0 {start} 0 0\n"


def _proc(root, processes):
    for pid, comm, utime, stime, start in processes:
        (root / str(pid)).mkdir(parents=True, exist_ok=True)
        (root / str(pid) / "stat").write_text(_stat(pid, comm, utime, stime, start))
    (root / "self").mkdir(exist_ok=True)  # not a PID: skipped


def test_a_process_is_its_pid_and_start_with_its_own_ticks(tmp_path):
    c = _c()
    _proc(tmp_path, [(10, "cicc", 30, 5, 900), (11, "odd) name", 1, 2, 901)])
    assert c.read_processes(tmp_path) == {
        (10, 900): ("cicc", 35, 13, 4),
        (11, 901): ("odd) name", 3, 13, 4),
    }


def test_grown_counts_what_each_command_spent_between_reads():
    c = _c()
    before = {(10, 900): ("cicc", 35, 0, 20), (12, 5): ("python3", 100, 50, 1)}
    now = {
        (10, 900): ("cicc", 60, 0, 20),  # 25 more
        (12, 5): ("python3", 104, 50, 1),  # 4 more
        (13, 990): ("ptxas", 9, 0, 12),  # new since: all of it
        (10, 999): ("ptxas", 2, 0, 12),  # PID 10 reused: a new process
    }
    assert c.grown(before, now) == {"cicc": 25, "python3": 4, "ptxas": 11}


def test_what_a_parent_reaped_beyond_its_children_last_seen_counts_as_reaped_by_it():
    c = _c()
    before = {
        (20, 1): ("nvcc", 5, 40, 12),
        (21, 2): ("cicc", 30, 0, 20),  # seen, then ends
    }
    now = {
        # nvcc reaped cicc (now 34 in all: 4 after its last read) and a
        # ptxas never seen (10): 40 + 34 + 10 = 84
        (20, 1): ("nvcc", 6, 84, 12),
    }
    assert c.grown(before, now) == {"nvcc": 1, "reaped by nvcc": 14}


def test_by_command_sums_the_steady_span_and_says_how_much_it_named():
    c = _c()
    ticks = c.TICKS
    samples = [
        {"t": 5.0, "busy": 99 * ticks, "spent": {"cicc": 10 * ticks}},  # before the span
        {"t": 12.0, "busy": 5 * ticks, "spent": {"cicc": 2 * ticks, "compute-sanitiz": 3 * ticks}},
        {"t": 20.0, "busy": 5 * ticks, "spent": {"cicc": ticks, "ptxas": ticks // 2, "x": ticks}},
        {"t": 40.0, "busy": 99 * ticks, "spent": {"ptxas": 100 * ticks}},  # after
    ]
    got = c.by_command(samples, {"from": 10.0, "to": 30.0}, most=2)
    assert got == {
        "core_seconds": 7.5,
        "commands": {"cicc": 3.0, "compute-sanitiz": 3.0, "other": 1.5},
        "covered": 0.75,
    }
    assert c.by_command(samples, None) is None


def test_samples_are_written_as_they_are_taken_and_read_back(tmp_path):
    c = _c()
    proc = tmp_path / "proc"
    _proc(proc, [(10, "cicc", 30, 5, 900)])
    cores = sorted(c.os.sched_getaffinity(0))
    (proc / "stat").write_text(
        "cpu  9 9 9 9 9 9 9 9 0 0\n"
        + "".join(f"cpu{n} 10 0 5 100 3 0 0 0 0 0\n" for n in cores)
        + "intr 1\n"
    )
    assert c.busy_ticks(set(cores[:1]), proc / "stat") == 15
    path = tmp_path / "run-commands.jsonl"
    sampler = c.CommandCpu(0.0, path, every=0.01, proc=proc)
    sampler.start()
    c.time.sleep(0.1)
    sampler.stop()
    with open(path, "a") as f:
        f.write('{"t": 9')  # a line the run was cut in
    assert c.load(path) == sampler.samples and sampler.samples
    assert all(s["spent"] == {} and s["busy"] == 0 for s in sampler.samples)


def test_gpu_utilisation_is_of_the_visible_gpus_only():
    t = _throughput()
    smi = "GPU-aaa, 44\nGPU-bbb, 0\n"
    assert t.visible_util(smi, {"GPU-aaa", "GPU-bbb"}) == [44, 0]
    assert t.visible_util(smi, {"GPU-aaa"}) == [44]
    assert t.visible_util(smi, set()) == []
    assert t.visible_util("No devices were found\n", {"GPU-aaa"}) == []
    smi = "GPU-aaa, 44, 81234\nGPU-bbb, 0, 512\n"  # with the memory in use (MiB)
    assert t.visible_util(smi, {"GPU-bbb"}) == [0]
    assert t.visible_memory(smi, {"GPU-aaa", "GPU-bbb"}) == [81234, 512]
    assert t.visible_memory("GPU-aaa, 44\n", {"GPU-aaa"}) == []


def test_a_wrapper_and_its_program_that_end_together_are_not_counted_twice():
    c = _c()
    before = {
        (30, 1): ("python3", 50, 0, 1),
        (31, 2): ("unshare", 1, 0, 30),  # python3 -> unshare -> checker
        (32, 3): ("checker-gpu_sum", 70, 0, 31),
    }
    # The checker spent 2 more and ended, unshare reaped it (72) and ended,
    # and python3 reaped unshare: 1 + 72.
    now = {(30, 1): ("python3", 51, 73, 1)}
    assert c.grown(before, now) == {"python3": 1, "reaped by python3": 2}


def test_analyse_reads_the_samplers_files_beside_a_cut_log(tmp_path):
    log = tmp_path / "throughput-cut.log"
    log.write_text(
        "[trace +10.0 s] w0 a 02_interleaved: graded {}\n"
        "[trace +30.0 s] w0 a 04_sequential_addressing: graded {}\n"
    )
    samples = [
        {"t": t, "cpu_busy": b, "gpu_util": [40]} for t, b in ((12, 0.5), (20, 0.7), (28, 0.9))
    ]
    (tmp_path / "throughput-cut-samples.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in samples) + '{"t": 3'  # cut mid-line
    )
    (tmp_path / "throughput-cut-commands.jsonl").write_text(
        json.dumps({"t": 15, "busy": 200, "spent": {"cicc": 100}}) + "\n"
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--analyse", str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout)
    assert got["busy_while_steady"] == {"samples": 3, "cpu_busy": 0.7, "gpu_util": 40}
    assert got["cpu_by_command"]["covered"] == 0.5
