"""Faults an instructor meets while grading a class (issue 22's table), each
injected on a CPU machine: no result is lost, duplicated or wrong, and the
message says what happened. Grading itself is faked (test_batch's
offline_batch) except where a real process must be killed."""

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import student_folder
from test_batch import LAB01

from grader import labmeta
from grader.batch import (
    orchestrator as batch,
    config as batch_config,
    guard as batch_guard,
    worker as batch_worker,
    lead_turns,
)
from grader.engine import feedback, harness_tree, lab_grading
from grader.infra import proc, store, toolchain
from grader.results import LabResult
from grader.status import LabStatus

REPO = Path(__file__).resolve().parents[2]
QUIET = {"progress": lambda *_: None}


def config(tmp_path, **kw):
    return batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[], **kw)


def rows(tmp_path):
    lines = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()[1:]
    return {line.split(",")[0]: line for line in lines}


# -- the machine's faults are the grader's, never a grade ----------------------


def test_a_full_disk_is_the_machines_fault_not_a_build_failure():
    full = toolchain.BuildResult(
        "lab",
        False,
        "ninja: build stopped\n/usr/bin/ld: final link failed: No space left on device\n",
    )
    assert "No space left on device" in full.machine_fault
    # The same words quoted from the student's code are the student's.
    quoted = toolchain.BuildResult(
        "lab", False, "labs/01/cpu_sum.cpp:12:2: error: #error No space left on device\n"
    )
    assert quoted.machine_fault == ""


def test_a_machine_fault_is_not_saved_as_a_grade_and_is_regraded(
    tmp_path, monkeypatch, offline_batch
):
    specs = [str(student_folder(tmp_path, n, "  return 42;\n")) for n in ("amy", "ben")]
    real = lab_grading.grade_lab
    calls = {"n": 0}

    def flaky(lab, build_dir, **kw):
        calls["n"] += 1
        if calls["n"] == 2:  # the second student graded meets a full TMPDIR
            return LabResult(
                lab=lab.id,
                title=lab.title,
                status="error",
                reason="the build failed for the machine's sake, not the code's: "
                "No space left on device",
                max_correctness=lab.points_correctness,
                max_performance=lab.points_performance,
            )
        return real(lab, build_dir, **kw)

    monkeypatch.setattr(lab_grading, "grade_lab", flaky)
    results = batch.run_batch(specs, config(tmp_path), **QUIET)
    bad = [r for r in results if r.error]
    assert len(bad) == 1 and "No space left on device" in bad[0].error
    assert "not graded" in rows(tmp_path)[bad[0].student]
    # The rerun grades that student again and keeps the other.
    messages = []
    results = batch.run_batch(specs, config(tmp_path), progress=messages.append)
    assert any("1 already graded, 1 to go" in m for m in messages)
    assert all(not r.error and r.points == LAB01.points_correctness for r in results)


def test_a_regrade_keeps_what_the_run_before_it_was_not_graded_for(
    tmp_path, monkeypatch, offline_batch
):
    # A lab wrong in one timed run and right in the next is an error
    # (timed_stage.inconsistent); the batch's next run regrades it and may pass
    # it by luck. The wrong answer must outlive result.json's replacement.
    amy = student_folder(tmp_path, "amy", "  return 42;\n")
    real = lab_grading.grade_lab
    why = "a timed test failed (call 3: expected 1.5, got 2.5); timed again: right in every call"

    def inconsistent(lab, build_dir, **kw):
        return LabResult(
            lab=lab.id,
            title=lab.title,
            status="error",
            reason=why,
            max_correctness=lab.points_correctness,
            max_performance=lab.points_performance,
        )

    monkeypatch.setattr(lab_grading, "grade_lab", inconsistent)
    first = batch.run_batch([str(amy)], config(tmp_path), **QUIET)[0]
    assert first.error and why in first.error
    monkeypatch.setattr(lab_grading, "grade_lab", real)
    again = batch.run_batch([str(amy)], config(tmp_path), **QUIET)[0]
    assert not again.error and again.points == LAB01.points_correctness
    kept = [n for n in again.notes if n.startswith(feedback.EARLIER)]
    assert len(kept) == 1 and why in kept[0] and first.date in kept[0]
    assert why in rows(tmp_path)["amy"]
    saved = store.load_result(tmp_path / "out" / "students" / "amy" / "result.json")
    assert saved is not None and saved.notes[0] == kept[0]
    # Graded again with other options, the same code keeps it, once.
    third = batch.run_batch([str(amy)], config(tmp_path, timeout=77), **QUIET)[0]
    assert [n for n in third.notes if n.startswith(feedback.EARLIER)] == kept
    # Other code is another submission: nothing of the old one follows it.
    code = amy / "labs" / "01_cpu_baseline" / "cpu_sum.cpp"
    code.write_text(code.read_text().replace("  return 42;\n", "  return 42;  // resubmitted\n"))
    fresh = batch.run_batch([str(amy)], config(tmp_path, timeout=77), **QUIET)[0]
    assert fresh.submission_hash != third.submission_hash
    assert not any(n.startswith(feedback.EARLIER) for n in fresh.notes)


def test_a_fault_while_grading_one_student_costs_only_that_student(
    tmp_path, monkeypatch, offline_batch
):
    specs = [str(student_folder(tmp_path, n, "  return 42;\n")) for n in ("cal", "dee", "eli")]
    real = batch_worker.Worker._grade

    def explode_for_dee(self, spec, student, course, labs, defer=False):
        if student == "dee":
            raise IsADirectoryError(21, "Is a directory", "cpu_sum.cpp")
        return real(self, spec, student, course, labs, defer)

    monkeypatch.setattr(batch_worker.Worker, "_grade", explode_for_dee)
    results = batch.run_batch(specs, config(tmp_path), **QUIET)
    assert sorted(r.student for r in results) == ["cal", "dee", "eli"]
    assert set(rows(tmp_path)) == {"cal", "dee", "eli"}
    dee = next(r for r in results if r.student == "dee")
    assert "IsADirectoryError" in dee.error
    assert all(r.points == LAB01.points_correctness for r in results if r.student != "dee")


def test_the_cli_exits_non_zero_when_anyone_was_not_graded(
    tmp_path, monkeypatch, offline_batch, capsys
):
    from grader import cli

    spec = str(student_folder(tmp_path, "fin", "  return 42;\n"))
    monkeypatch.setattr(
        batch_worker.Worker,
        "_grade",
        lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")),
    )
    code = cli.main(["batch", spec, "--out", str(tmp_path / "out"), "--lab", "01"])
    assert code == 1
    assert "NOT GRADED (1): fin" in capsys.readouterr().err


# -- submissions that are not plain files cost only themselves -----------------


def test_a_lab_file_that_is_a_folder_is_refused_for_that_student_only(tmp_path, offline_batch):
    good = student_folder(tmp_path, "gil", "  return 42;\n")
    odd = student_folder(tmp_path, "hob", "  return 42;\n")
    lab_file = odd / "labs" / "01_cpu_baseline" / "cpu_sum.cpp"
    lab_file.unlink()
    lab_file.mkdir()
    results = {
        r.student: r for r in batch.run_batch([str(good), str(odd)], config(tmp_path), **QUIET)
    }
    assert results["gil"].points == LAB01.points_correctness
    assert results["hob"].points == 0 and "cpu_sum.cpp" in " ".join(results["hob"].notes)
    assert set(rows(tmp_path)) == {"gil", "hob"}


def test_a_fifo_in_a_submission_does_not_hang_the_batch(tmp_path, offline_batch):
    odd = student_folder(tmp_path, "ivy", "  return 42;\n")
    lab_file = odd / "labs" / "01_cpu_baseline" / "cpu_sum.cpp"
    lab_file.unlink()
    os.mkfifo(lab_file)
    signal.alarm(60)  # a hang fails the test instead of stopping CI
    try:
        results = batch.run_batch([str(odd)], config(tmp_path), **QUIET)
    finally:
        signal.alarm(0)
    assert results[0].points == 0 and "cpu_sum.cpp" in " ".join(results[0].notes)


def test_two_submissions_with_one_id_are_refused_naming_both(tmp_path, offline_batch):
    a = student_folder(tmp_path / "a", "stu01")
    b = student_folder(tmp_path / "b", "stu01")
    with pytest.raises(ValueError) as e:
        batch.run_batch([str(a), str(b)], config(tmp_path), **QUIET)
    assert str(a) in str(e.value) and str(b) in str(e.value)
    assert not (tmp_path / "out" / "students").exists()


# -- one batch per folder; a rerun with other options regrades ------------------


def test_a_second_batch_on_one_out_is_refused(tmp_path, offline_batch):
    spec = str(student_folder(tmp_path, "jon"))
    (tmp_path / "out").mkdir()
    with open(tmp_path / "out" / ".batch.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(toolchain.SetupError, match="another batch is writing"):
            batch.run_batch([spec], config(tmp_path), **QUIET)
    assert offline_batch == []  # nobody was graded


def test_a_rerun_with_other_options_regrades(tmp_path, offline_batch):
    spec = str(student_folder(tmp_path, "kay", "  return 42;\n"))
    batch.run_batch([spec], config(tmp_path, perf=False), **QUIET)
    offline_batch.clear()
    messages = []
    batch.run_batch([spec], config(tmp_path, perf=True), progress=messages.append)
    assert offline_batch == ["01_cpu_baseline"]
    assert any("0 already graded, 1 to go" in m for m in messages)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda d: {**d, "labs": [{**d["labs"][0], "points_correctness": 99}]},
        lambda d: {},
        lambda d: None,
        lambda d: {**d, "extra": 1},
        lambda d: {**d, "labs": "all of them"},
    ],
    ids=["99_points", "empty", "null", "extra_key", "labs_not_a_list"],
)
def test_an_edited_or_malformed_result_is_regraded(tmp_path, offline_batch, tamper):
    spec = str(student_folder(tmp_path, "lee", "  return 42;\n"))
    batch.run_batch([spec], config(tmp_path), **QUIET)
    path = tmp_path / "out" / "students" / "lee" / "result.json"
    path.write_text(json.dumps(tamper(json.loads(path.read_text()))))
    offline_batch.clear()
    results = batch.run_batch([spec], config(tmp_path), **QUIET)
    assert offline_batch == ["01_cpu_baseline"]
    assert results[0].points == LAB01.points_correctness


def test_a_result_that_is_not_utf8_is_regraded(tmp_path, offline_batch):
    spec = str(student_folder(tmp_path, "max", "  return 42;\n"))
    batch.run_batch([spec], config(tmp_path), **QUIET)
    (tmp_path / "out" / "students" / "max" / "result.json").write_bytes(b"\xff\xfe{\x00")
    offline_batch.clear()
    batch.run_batch([spec], config(tmp_path), **QUIET)
    assert offline_batch == ["01_cpu_baseline"]


# -- bad paths and folders fail before any building ------------------------------


def test_a_missing_submission_is_named_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.setattr(
        batch_worker.Worker, "prepare", lambda *a, **k: pytest.fail("the worker was set up")
    )
    spec = str(student_folder(tmp_path, "ned"))
    with pytest.raises(toolchain.SetupError, match="no such submission: .*nobody"):
        batch.run_batch([spec, str(tmp_path / "nobody")], config(tmp_path), **QUIET)


def test_an_out_folder_that_cannot_be_written_is_one_clear_line(tmp_path, capsys):
    from grader import cli

    (tmp_path / "a-file").write_text("")
    spec = str(student_folder(tmp_path, "oli"))
    code = cli.main(["batch", spec, "--out", str(tmp_path / "a-file" / "out"), "--lab", "01"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("error: cannot use ") and "a-file" in err[0]


def test_a_nearly_full_disk_is_refused_before_anything_is_built(
    tmp_path, monkeypatch, capsys, offline_batch
):
    from collections import namedtuple

    from grader import cli

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(
        batch_guard.shutil, "disk_usage", lambda p: usage(1 << 40, 1 << 40, 5 << 20)
    )
    spec = str(student_folder(tmp_path, "ora"))
    code = cli.main(["batch", spec, "--out", str(tmp_path / "out"), "--lab", "01"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "has 5 MB free" in err[0] and "out" in err[0]
    assert offline_batch == []


def test_a_copied_out_folder_sets_its_worker_up_again(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(
        harness_tree,
        "copy_harness",
        lambda repo, dest, skip=(): dest.mkdir(parents=True, exist_ok=True),
    )
    monkeypatch.setattr(
        toolchain,
        "configure",
        lambda build, options, source: (
            build.mkdir(parents=True, exist_ok=True),
            (build / "build.ninja").write_text(str(build)),
            made.append(build),
        ),
    )
    monkeypatch.setattr(toolchain, "build", lambda *a, **k: toolchain.BuildResult("all", True))
    cfg = config(tmp_path)
    first = batch_worker.Worker(tmp_path / "out" / "workers" / "w0", None, cfg)
    first.prepare(labmeta.load(), [LAB01], lambda *_: None)
    assert len(made) == 1
    again = batch_worker.Worker(tmp_path / "out" / "workers" / "w0", None, cfg)
    again.prepare(labmeta.load(), [LAB01], lambda *_: None)
    assert len(made) == 1  # the same folder: its build is reused
    shutil.copytree(tmp_path / "out", tmp_path / "copy", symlinks=True)
    messages = []
    moved = batch_worker.Worker(tmp_path / "copy" / "workers" / "w0", None, cfg)
    moved.prepare(labmeta.load(), [LAB01], messages.append)
    assert len(made) == 2 and made[1] == tmp_path / "copy" / "workers" / "w0" / "src" / "build"
    assert any("made in another folder" in m for m in messages)


# -- interrupted: nothing outlives the batch, nothing half-graded is saved -------

DRIVER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {repo!r})
    from grader import cli
    from grader.batch import worker as batch_worker
    from grader.engine import feedback, harness_tree, lab_grading, submissions
    from grader.infra import proc, toolchain
    from grader.results import LabResult

    def grade_lab(lab, build_dir, **kw):
        # A test binary that takes its time; the marker tells the test it runs.
        open({marker!r}, "w").close()
        for _ in range({sleeps}):  # killed, a worker goes on to its next step
            proc.run(["sleep", "97.25"], timeout=300)
        return LabResult(lab=lab.id, title=lab.title, status="graded",
                         points_correctness=lab.points_correctness,
                         max_correctness=lab.points_correctness,
                         max_performance=lab.points_performance)

    lab_grading.grade_lab = grade_lab
    batch_worker.Worker.prepare = lambda self, course, labs, progress=None, seed=None: \\
        harness_tree.copy_harness(toolchain.REPO, self.src)
    batch_worker.Worker.measure_ceilings = lambda *a, **k: None
    batch_worker.Worker.preflight = lambda *a, **k: None
    sys.exit(cli.main(["batch", *sys.argv[1:]]))
""")


def _sleepers() -> list[str]:
    done = subprocess.run(["pgrep", "-f", "sleep 97.25"], capture_output=True, text=True)
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep (procps)")
@pytest.mark.parametrize(
    "sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["sigterm", "ctrl_c"]
)
def test_an_interrupted_batch_kills_its_processes_and_saves_nothing_half_graded(
    tmp_path, sig, code
):
    driver, marker = tmp_path / "driver.py", tmp_path / "grading"
    driver.write_text(DRIVER.format(repo=str(REPO), marker=str(marker), sleeps=1))
    spec = str(student_folder(tmp_path, "pat", "  return 42;\n"))
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, str(driver), spec, "--out", str(out), "--lab", "01"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not (marker.exists() and _sleepers()) and time.time() < deadline and run.poll() is None:
        time.sleep(0.2)
    if not _sleepers():
        run.kill()
        pytest.fail("the fake test binary never started: " + run.communicate()[1][-2000:])
    run.send_signal(sig)
    try:
        _, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        pytest.fail("the batch did not stop")
    assert run.returncode == code
    assert "interrupted" in err and "run the same command again" in err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert not _sleepers(), "a test process outlived the batch"
    assert not (out / "students" / "pat" / "result.json").exists()
    with open(out / ".batch.lock", "a") as lock:  # released: a rerun may start
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert store.load_result(out / "students" / "pat" / "result.json") is None


def _sleeping_workers(tmp_path, workers: int, sleeps: int) -> subprocess.Popen:
    """A batch of `workers` students on as many workers, whose fake test
    binary (a sleep of 97 s) each worker starts `sleeps` times in a row;
    returned once every worker's first one runs."""
    driver, marker = tmp_path / "driver.py", tmp_path / "grading"
    driver.write_text(DRIVER.format(repo=str(REPO), marker=str(marker), sleeps=sleeps))
    names = "abcdefgh"[:workers]
    specs = [str(student_folder(tmp_path, n, "  return 42;\n")) for n in names]
    run = subprocess.Popen(
        [sys.executable, str(driver), *specs, "--out", str(tmp_path / "out"), "--lab", "01"]
        + ["--jobs-per-gpu", str(workers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while len(_sleepers()) < workers and time.time() < deadline and run.poll() is None:
        time.sleep(0.2)
    if len(_sleepers()) < workers:
        run.kill()
        pytest.fail(f"{workers} workers never ran at once: " + run.communicate()[1][-2000:])
    return run


@pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep (procps)")
def test_a_second_signal_while_the_batch_stops_cannot_cut_its_killing_short(tmp_path):
    # An impatient instructor presses Ctrl-C again, or a scheduler follows with
    # SIGTERM, while the workers wind down. Raised where it landed, the second
    # signal left the killing loop and the workers went on starting processes,
    # which kept the batch alive (here: sleeps of 97 s, 20 a worker).
    run = _sleeping_workers(tmp_path, workers=2, sleeps=20)
    run.send_signal(signal.SIGINT)
    time.sleep(0.3)
    run.send_signal(signal.SIGINT)
    run.send_signal(signal.SIGTERM)
    try:
        _, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        pytest.fail("the batch did not stop")
    assert run.returncode == 130  # the first signal's
    assert "Traceback" not in err
    time.sleep(0.5)
    assert not _sleepers(), "a test process outlived the batch"


@pytest.mark.skipif(shutil.which("pgrep") is None, reason="needs pgrep (procps)")
def test_an_interrupted_batch_kills_what_its_workers_start_after_the_interrupt(tmp_path):
    # Workers go on to their next step until they see the stop: each process
    # they start must die at once. Killing between waits of 0.2 s on each
    # worker in turn let such a process live for seconds, and a batch took half
    # a minute to stop (docs/decisions.md, "An interrupted batch kills its
    # processes every 0.1 s").
    run = _sleeping_workers(tmp_path, workers=4, sleeps=40)
    run.send_signal(signal.SIGINT)
    asked = time.monotonic()
    try:
        run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        pytest.fail("the batch did not stop")
    # 40 steps a worker: about 0.1 s each now; about 0.8 s each (four workers
    # waited on in turn) before.
    assert time.monotonic() - asked < 12
    assert run.returncode == 130
    time.sleep(0.5)
    assert not _sleepers()


# -- a lab a worker cannot grade (lab 12: two GPUs) is left out of its harness --


def worker_of_gpus(gpus: int, tmp_path, monkeypatch) -> tuple[batch_worker.Worker, list[str]]:
    """A batch worker that sees `gpus` GPUs, whose builds are recorded, not run."""
    monkeypatch.setattr(batch_worker.Worker, "gpu_count", property(lambda self: gpus))
    built: list[str] = []
    monkeypatch.setattr(
        harness_tree, "copy_harness", lambda repo, dest, skip=(): dest.mkdir(parents=True)
    )
    monkeypatch.setattr(toolchain, "configure", lambda *a, **k: None)

    def build(build_dir, targets, timeout=0):
        built.extend(targets)
        return toolchain.BuildResult(",".join(targets), True)

    monkeypatch.setattr(toolchain, "build", build)
    return batch_worker.Worker(tmp_path / "w", None, config(tmp_path)), built


def test_a_batch_with_lab_12_builds_measures_and_preflights_only_the_labs_it_grades(
    tmp_path, monkeypatch
):
    """Lab 12's calls span two GPUs or more and a batch worker holds one: a batch
    of every lab (the default) must neither build checker-gpu_allreduce there,
    nor measure a ceiling through it, nor stop in the preflight because lab 12
    is "not graded" on one GPU."""
    course = labmeta.load()
    lab01, lab12 = course.lab("01"), course.lab("12")
    assert lab_grading.checker_target(lab12) == "checker-gpu_allreduce" and lab12.spans_gpus
    worker, built = worker_of_gpus(1, tmp_path, monkeypatch)
    worker.prepare(course, [lab01, lab12], progress=lambda *_: None)
    assert built == ["checker-cpu_sum", lab_grading.runner_target(lab01, "labs")]

    ran: list[list[str]] = []

    def run(cmd, **kw):
        ran.append(cmd)
        return proc.Finished(0, False, False, '{"ceiling_gbps": 10.0, "device": "cpu"}\n', 0.1)

    monkeypatch.setattr(proc, "run", run)
    worker.measure_ceilings([lab01, lab12], course, "before")
    assert [Path(c[0]).name for c in ran] == ["checker-cpu_sum"]

    graded: list[str] = []

    def grade_lab(lab, build_dir, **kw):
        graded.append(lab.id)
        r = lab_grading.blank_result(lab, LabStatus.GRADED, "")
        r.points_correctness = r.max_correctness
        return r

    monkeypatch.setattr(lab_grading, "grade_lab", grade_lab)
    monkeypatch.setattr(batch_worker, "install_reference", lambda course, dest: None)
    built.clear()

    class Turns(lead_turns.LeadTurns):
        def warmed(self):
            graded.append(f"warmed after {built}")

    worker.preflight(course, [lab01, lab12], progress=lambda *_: None, turns=Turns())
    # Its early build (preflight_warm.py) makes the references it grades, no
    # other, and the batch's wait for the other leads comes before any timing.
    runner = lab_grading.runner_target(lab01, "labs")
    assert graded == [f"warmed after {[runner]}", lab01.id]
    # A student's lab 12 is not graded there, with the reason, and builds nothing.
    why = worker.cannot_grade(lab12)
    assert why and "a batch worker (each holds one GPU)" in why and "needs 2 or more" in why
    assert not worker.gradable(lab12) and worker.gradable(lab01)


def test_a_batch_worker_of_two_gpus_grades_lab_12(tmp_path, monkeypatch):
    """A worker that sees two GPUs (a Slurm task given two) builds lab 12's
    checker and runner and grades it like any other lab."""
    course = labmeta.load()
    lab12 = course.lab("12")
    worker, built = worker_of_gpus(2, tmp_path, monkeypatch)
    worker.prepare(course, [lab12], progress=lambda *_: None)
    assert built == ["checker-gpu_allreduce", "12_multi_gpu_allreduce-runner-labs"]
    assert worker.gradable(lab12) and worker.cannot_grade(lab12) is None


def test_a_preflight_whose_reference_falls_short_of_its_performance_points_warns(
    tmp_path, monkeypatch
):
    """The machine's fault, not the students': the instructor is told before
    anyone is graded (the batch goes on: one timed run moves between calls)."""
    course = labmeta.load()
    lab01 = course.lab("01")
    worker, _ = worker_of_gpus(1, tmp_path, monkeypatch)

    def grade_lab(lab, build_dir, **kw):
        r = lab_grading.blank_result(lab, LabStatus.GRADED, "")
        r.points_correctness = r.max_correctness
        r.fraction, r.threshold, r.points_performance = 0.341, 0.49, 0.0
        return r

    monkeypatch.setattr(lab_grading, "grade_lab", grade_lab)
    monkeypatch.setattr(batch_worker, "install_reference", lambda course, dest: None)
    said: list[str] = []
    worker.preflight(course, [lab01], progress=said.append)
    (warning,) = [s for s in said if "WARNING" in s]
    assert "preflight 01_cpu_baseline" in warning and "0.341" in warning
    assert worker.reference_fraction[lab01.id] == 0.341
    worker.config.perf = False  # nothing timed: nothing to warn of
    said.clear()
    worker.preflight(course, [lab01], progress=said.append)
    assert not [s for s in said if "WARNING" in s]
