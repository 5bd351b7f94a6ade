"""`batch --slurm`: grade a class on a Slurm cluster, one job-array task per submission.

The submitting process (on a login node) works out which submissions still need
grading (a student whose result.json is there for the same submission is done,
as in a local batch), writes a manifest to OUT/slurm/, and submits one job
array: task i grades submission i with `python3 -m grader slurm-task MANIFEST`,
on one GPU (--gres=gpu:1) when the labs need one and the partition has GPUs.
Each task writes OUT/students/<name>/ exactly as a local worker does, so OUT
must be on a file system that the nodes share. At most `slots` tasks run at
once (the array's %N throttle); each running task holds a slot, a build tree in
OUT/slurm/slots/ that is built once and then only recompiles a submission's
lab files (a lock file per slot: two tasks never build in one tree). The task's
side is grader/batch/slurm_task.py; this module is the submitting side.

The submitting process then follows the job through squeue (pending, running,
graded; sacct, where the cluster keeps accounting, names the state of a task
that ended without a result), prints each student as their result arrives,
and writes OUT/gradebook.csv from every result, the same file a local batch
writes. Interrupted (Ctrl-C, a closed terminal), it leaves the job running: the
same command again follows the job still in the queue, then submits whatever
is left (tasks that failed, new or changed submissions).

A job counts as finished only when Slurm says so: squeue answers and lists none
of its tasks (or says the job id is unknown, long purged), and sacct, where the
cluster keeps accounting, names no task still pending or running. A squeue or
sacct that fails (a controller time-out, a non-zero exit, output that cannot be
read, no answer at all) is asked again, with growing pauses, for up to
RETRY_SECONDS (GRADER_SLURM_RETRY, 300 s); past that the batch stops with
SlurmUnreachable, writing nothing for tasks whose state it does not know: the
job may still be running, and the same command again follows it.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from .. import labmeta
from ..engine import submissions
from ..infra import log, slurm, store, toolchain
from ..infra.sandbox import Limits
from ..results import StudentResult
from . import orchestrator as batch, config as batch_config, gradebook

POLL_SECONDS = float(os.environ.get("GRADER_SLURM_POLL", "10"))


def _state_path(out: Path) -> Path:
    return out / "slurm" / "state.json"


def _load_state(out: Path) -> dict | None:
    try:
        return json.loads(_state_path(out).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _lost(job: str, e: slurm.SlurmUnreachable, doing: str) -> slurm.SlurmUnreachable:
    return slurm.SlurmUnreachable(
        f"batch --slurm: Slurm did not answer while {doing} job {job}: {e}. The job may "
        "still be running; no gradebook was written and no task was marked 'not graded'. "
        "Run the same command again (once squeue answers) to follow the job and write "
        "the gradebook."
    )


def _name(out: Path) -> str:
    return f"grade-{out.name}"[:60]


def _manifest(config: batch_config.BatchConfig, specs: list[str]) -> dict:
    limits = config.sandbox_limits or Limits()
    ids = submissions.student_ids(specs, config.roster)
    return {
        "out": str(config.out),
        "specs": specs,
        "ids": [ids[s] for s in specs],
        "lab_ids": config.lab_ids,
        "timeout": config.timeout,
        "arch": config.arch,
        "perf": config.perf,
        "sandbox": config.sandbox,
        "sandbox_limits": asdict(limits),
        "sanitize": config.sanitize,
        "linked_policy": config.linked_policy,
        "preflight": config.preflight,
        "slots": config.slots,
        "commit": toolchain.git_commit(),
        "submitted": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _absolute(spec: str) -> str:
    """Tasks run in the repository root: a local path must not depend on the cwd."""
    p = Path(spec)
    return str(p.resolve()) if p.exists() else spec


def submit(
    config: batch_config.BatchConfig,
    specs: list[str],
    labs: list[labmeta.Lab],
    progress=log.progress,
) -> str:
    out = config.out
    sdir = out / "slurm"
    (sdir / "logs").mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    manifest = sdir / f"manifest-{stamp}.json"
    manifest.write_text(json.dumps(_manifest(config, specs), indent=2) + "\n")
    extra = list(config.slurm_args or [])
    cmd = [
        "sbatch",
        "--parsable",
        f"--array=0-{len(specs) - 1}%{max(1, config.slots)}",
        f"--job-name={_name(out)}",
        f"--output={sdir / 'logs' / '%A_%a.out'}",
        f"--chdir={toolchain.REPO}",
        "--export=ALL",
        "--ntasks=1",
    ]
    if config.partition:
        cmd.append(f"--partition={config.partition}")
    needs_gpu = any(lab.needs_gpu for lab in labs)
    gpus = needs_gpu and slurm.partition_has_gpus(config.partition)
    if gpus and not any(a.startswith(("--gres", "--gpus")) for a in extra):
        cmd.append("--gres=gpu:1")
    elif needs_gpu and not gpus:
        progress(
            "[slurm] the partition lists no GPUs (sinfo %G): GPU labs will be built but not run"
        )
    if not any(a.startswith(("--time", "-t")) for a in extra):
        # The builds, every lab's timeout, and room to spare.
        minutes = math.ceil((900 + len(labs) * (config.timeout + 120)) / 60)
        cmd.append(f"--time={minutes}")
    cmd += extra
    # The grader of this checkout, with this Python, in the repository root.
    cmd += ["--wrap", f"exec {sys.executable} -m grader slurm-task {manifest}"]
    # Not asked again on failure: an sbatch that timed out may have submitted the job.
    res = slurm.call(cmd)
    if not res.ok:
        raise slurm.SlurmError(f"sbatch failed: {slurm.failure_text(res)}")
    lines = slurm.output_lines(res.output, "sbatch")
    job = lines[-1].split(";")[0] if lines else ""
    if not job.isdigit():
        raise slurm.SlurmError(f"sbatch gave no job id: {res.output.strip()!r}")
    _state_path(out).write_text(
        json.dumps(
            {"job": job, "name": _name(out), "manifest": str(manifest), "specs": specs}, indent=2
        )
        + "\n"
    )
    progress(
        f"[slurm] submitted job {job}: {len(specs)} task(s), at most {config.slots} at once"
        + (f", partition {config.partition}" if config.partition else "")
        + (", one GPU each" if gpus else "")
    )
    return job


def follow(
    out: Path,
    job: str,
    specs: list[str],
    progress=log.progress,
    poll: float | None = None,
    total: int | None = None,
    already: int = 0,
    roster: dict[str, str] | None = None,
) -> dict[int, str]:
    """Waits until Slurm says `job` is over, printing the scheduler's counts when
    they change and each student as their result arrives; returns sacct's final
    task states ({} without accounting). Raises SlurmUnreachable (nothing
    written) where squeue keeps failing: the job may still be running."""
    poll = POLL_SECONDS if poll is None else poll
    students = out / "students"
    ids = submissions.student_ids(specs, roster)
    names = [ids[s] for s in specs]
    seen: dict[str, float] = {}
    start_mtimes = {n: _mtime(students / n / "result.json") for n in names}
    started = time.time()
    last = ""
    gone = None  # when squeue first listed none of the job's tasks
    total = total or len(names)
    while True:
        try:
            states = slurm.queue_states(job, progress)
        except slurm.SlurmUnreachable as e:
            raise _lost(job, e, "following") from None
        for n in names:
            m = _mtime(students / n / "result.json")
            if m and m != start_mtimes[n] and n not in seen:
                seen[n] = m
                res = store.load_result(students / n / "result.json")
                if res is not None:
                    progress(
                        f"[slurm] {already + len(seen)}/{total} {res.summary_line()}"
                        f"  [{time.time() - started:.0f} s]"
                    )
        counts: dict[str, int] = {}
        for st in states.values():
            counts[st.lower()] = counts.get(st.lower(), 0) + 1
        line = (
            f"[slurm] job {job}: "
            + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
            + (", " if counts else "")
            + f"{len(seen)}/{len(names)} graded"
        )
        if line != last:
            progress(line)
            last = line
        if not slurm.in_queue(states):
            # squeue says the job is over; sacct (where there is accounting) must
            # not say a task is still pending or running. It may lag behind the
            # controller for a while: past RETRY_SECONDS, squeue has the last word.
            final = slurm.finished_states(job, progress)
            late = sorted(i for i, st in final.items() if st in slurm.ACTIVE)
            gone = time.monotonic() if gone is None else gone
            if not late:
                return final
            if time.monotonic() - gone > slurm.RETRY_SECONDS:
                progress(
                    f"[slurm] squeue lists no task of job {job}, sacct still names "
                    f"task(s) {', '.join(map(str, late))} {final[late[0]].lower()}: "
                    "taking squeue's word"
                )
                return final
        else:
            gone = None
        time.sleep(poll)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def run_batch(
    specs: list[str], config: batch_config.BatchConfig, progress=log.progress
) -> list[StudentResult]:
    _check_tools(config, progress)
    config.out = config.out.resolve()
    course = labmeta.load()
    labs = [course.lab(i) for i in config.lab_ids] if config.lab_ids else list(course.labs)
    specs = [_absolute(s) for s in specs]
    ids = submissions.student_ids(specs, config.roster)
    _follow_earlier(config, progress)
    if (not_waited := _submit_and_follow(config, specs, ids, course, labs, progress)) is not None:
        return not_waited
    results = _results(config.out / "students", specs, ids)
    gradebook.write(config.out, results, labs, progress, "slurm")
    return results


def _check_tools(config: batch_config.BatchConfig, progress) -> None:
    ok, why = slurm.available()
    if not ok:
        raise slurm.SlurmError(f"batch --slurm: {why}")
    if config.sandbox:
        from ..infra import bwrap

        ok, why = bwrap.available()
        if not ok:  # checked here; the nodes check again for themselves
            progress(f"[slurm] note: no sandbox on this machine ({why}); the nodes need one")


def _follow_earlier(config: batch_config.BatchConfig, progress) -> None:
    """A job of an earlier run that is still queued or running: followed first."""
    state = _load_state(config.out)
    if not state:
        return
    try:
        earlier = slurm.in_queue(slurm.queue_states(state["job"], progress)) and slurm.job_name(
            state["job"], progress
        ) == state.get("name")
    except slurm.SlurmUnreachable as e:
        raise _lost(state["job"], e, "looking for the earlier run's") from None
    if earlier:
        progress(
            f"[slurm] job {state['job']} of an earlier run is still in the queue: following it"
        )
        follow(config.out, state["job"], state["specs"], progress, roster=config.roster)


def _submit_and_follow(
    config: batch_config.BatchConfig,
    specs: list[str],
    ids: dict[str, str],
    course,
    labs: list[labmeta.Lab],
    progress,
) -> list[StudentResult] | None:
    """The students without a result submitted as one job and followed to its
    end (None); where the run does not wait for it (--no-wait), the results
    already there."""
    students = config.out / "students"
    while True:
        done: list[StudentResult] = []
        todo: list[str] = []
        for spec in specs:
            prev = batch.previous_result(spec, ids[spec], students, course, config)
            if prev is not None:
                done.append(prev)
            else:
                todo.append(spec)
        progress(
            f"[slurm] {len(specs)} submissions: {len(done)} already graded, {len(todo)} to submit"
        )
        if not todo:
            return None
        job = submit(config, todo, labs, progress)
        if not config.wait:
            progress(
                f"[slurm] not waiting: run the same command again to follow job {job} "
                "and write the gradebook"
            )
            return done
        final = follow(
            config.out,
            job,
            todo,
            progress,
            total=len(specs),
            already=len(done),
            roster=config.roster,
        )
        missing = [
            s for s in todo if batch.previous_result(s, ids[s], students, course, config) is None
        ]
        if missing:
            for i, spec in enumerate(todo):
                if spec in missing:
                    log_file = config.out / "slurm" / "logs" / f"{job}_{i}.out"
                    progress(
                        f"[slurm] {ids[spec]}: no result (task {job}_{i}: "
                        f"{final.get(i, 'state unknown')}; log {log_file})"
                    )
            return None  # not resubmitted in a loop: the next run tries them again


def _results(students: Path, specs: list[str], ids: dict[str, str]) -> list[StudentResult]:
    """Every student's result, or one that says its task left none."""
    results = []
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for spec in specs:
        name = ids[spec]
        res = store.load_result(students / name / "result.json")
        if res is None:
            res = StudentResult(
                name,
                spec,
                "",
                toolchain.git_commit(),
                now,
                error="not graded: its Slurm task ended without a result "
                "(see OUT/slurm/logs/); run the batch again",
            )
        results.append(res)
    return results
