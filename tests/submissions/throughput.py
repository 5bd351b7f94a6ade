#!/usr/bin/env python3
"""How many student-labs an hour `batch` grades: the class of class.toml (ten
students, correct and buggy, one endless loop among them), on the labs it
lists, graded in one uninterrupted batch from fresh folders, then checked
against the outcomes class.toml expects.

usage: throughput.py OUT NAME [--grader DIR] [--work DIR] [--arch ARCH]
                     [--timeout S] [--copies N] [-- BATCH OPTION ...]

--copies N: the class N times over (alice, alice-2, ...), each lab file made
distinct by a comment in its fence, so that the batch's fixed costs (trees,
preflight, ceilings) weigh as in a class of 10 N students.

--grader: the repository whose grader runs (default this one; another
commit's tree, e.g. from `git archive`, measures that commit the same way).
--deadline S: interrupt the batch after S seconds (as Ctrl-C would: every
result already written is kept) and measure what it graded by then; the check
then covers the students graded. A device call has a limit of its own, and a
run it cuts would measure nothing.

With GRADER_TRACE=1 in the environment it also reports the steady rate: the
student-labs finished between the first student's first lab and the end, over
that time, without the batch's set-up (trees, preflight, ceilings), which a
class of 300 pays once; and, over the same span, the median share of the CPU
cores that were busy and of the GPUs' utilisation (sampled every 2 s from
/proc/stat and nvidia-smi): which of the two held the batch back.

The steady rate counts a lab when its untimed tests end; its timed part may
still wait for a drain then, and a span too short for drains leaves their cost
out (with many workers the first drain can come two minutes into the span).
So over the same span it also
reports the complete rate (complete_rate): the labs of the students that were
done (timed parts run, result written), with the timed turns the span held
and the labs graded by its end whose students were not done. While those pile
up (a batch filling its pipeline) the complete rate is low and the steady rate
high; the rate a long batch keeps lies between them, and they meet once the
span holds as many drains as the batch needs. And the class's own pace
(done_rate): the labs of the students done after the first student, from
the first done to the last, every drain they needed included and no filling
of the pipeline: what a class much larger than the span would keep.

Over the same span, from the trace's run lines: how many shared runs held a
run slot on average, and the share of the time a run held a GPU alone (a
timed run) or nothing ran at all, and how much of that idle fell while a
timed run waited or started (gpu_holds): where the GPUs' time went.

Writes OUT/throughput-NAME.json, OUT/throughput-NAME.log and the batch's
class report as OUT/throughput-NAME-report.html, and prints one
line: seconds, student-labs per hour, and whether every outcome was right.
The CPU and GPU samples go to OUT/throughput-NAME-samples.jsonl as they are
taken (and --cpu-by-command's to -commands.jsonl), so that a run its device
call cuts keeps them beside its log for --analyse.

Per kind of run (holds_by_kind): how many, and the seconds they held a slot
or the GPU, started and waited. Per phase of a worker's lab (phases: build,
policy, tests, sanitizer): how many labs, the median and the total seconds.
Per lab, each graded student's fraction of the copy ceiling and the
reference's (fractions): whether load moved what students are graded on.
Per student done (student_latency): its labs' time, one after another in one
worker, and its timed turn's wait: how long a span must be to see students done.

usage: throughput.py --analyse LOG   the steady and complete rates, gpu_holds, holds_by_kind
                                     and phases of a kept log; with the run's JSON beside it
                                     (LOG's name, .json), fraction_spread too; with
                                     the samplers' files beside it (LOG's name,
                                     -samples.jsonl, -commands.jsonl), busy_while_steady
                                     and cpu_by_command too"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(REPO))
import check_class  # noqa: E402
import cpu_by_command  # noqa: E402
import make_class  # noqa: E402

from grader import labmeta  # noqa: E402
from grader.infra import gpus  # noqa: E402
from grader.infra import cpu_busy as machine_load  # noqa: E402


def main() -> int:
    if sys.argv[1:2] == ["--analyse"] and len(sys.argv) == 3:
        path = Path(sys.argv[2])
        log = path.read_text()
        steady = steady_rate(log)
        analysed = {
            "steady": steady,
            "complete": complete_rate(log, steady),
            "per_minute": per_minute(log, steady),
            "done_rate": done_rate(log),
            "gpu_holds": gpu_holds(log, steady),
            "holds_by_kind": holds_by_kind(log),
            "phases": phases(log, steady),
            "student_latency": student_latency(log),
            "retimed": retimed(log),
            "timed_failures": timed_failures(log),
        }
        # The samplers' files, written as they went: a cut run has them too.
        if beside(path, "samples").exists():
            samples = cpu_by_command.load(beside(path, "samples"))
            analysed["busy_while_steady"] = busy_between(samples, steady)
        if beside(path, "commands").exists():
            analysed["cpu_by_command"] = cpu_by_command.by_command(
                cpu_by_command.load(beside(path, "commands")), steady
            )
        run = path.with_suffix(".json")  # the run's own record, beside its log
        if run.exists():
            analysed["fraction_spread"] = fraction_spread(
                json.loads(run.read_text()).get("fractions") or {}
            )
        print(json.dumps(analysed, indent=2))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("name")
    ap.add_argument("--grader", type=Path, default=REPO)
    ap.add_argument("--work", type=Path, default=Path("/tmp/throughput"))
    ap.add_argument("--arch", default="auto")
    ap.add_argument("--timeout", default="60")
    ap.add_argument("--copies", type=int, default=1, help="the class this many times over")
    ap.add_argument(
        "--students",
        type=int,
        help="grade only the first N students of the copies (e.g. 32 of --copies 4: "
        "the class of ten three times over and two more)",
    )
    ap.add_argument("--deadline", type=float, help="interrupt the batch after this many seconds")
    ap.add_argument(
        "--cpu-by-command",
        action="store_true",
        help="also read every process's CPU time, for the core-seconds each program "
        "spent over the steady span (cpu_by_command.py)",
    )
    ap.add_argument(
        "--labs",
        default="class",
        help="the labs graded: class (class.toml's), course (every lab one GPU grades, "
        "issue 16's 11), or ids separated by commas",
    )
    # More `batch` options follow a `--` (split here: argparse would take the
    # first positional run, before any option, as all of them).
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.batch_options = argv[cut + 1 :]
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work / args.name
    shutil.rmtree(work, ignore_errors=True)  # nothing to resume: a run from scratch
    subs = make_class.write_class(work / "class", copies=args.copies)[: args.students]
    names = {p.name for p in subs}
    labs = graded_labs(args.labs)
    cmd = [
        sys.executable,
        "-m",
        "grader",
        "batch",
        *map(str, subs),
        "--out",
        str(work / "out"),
        "--arch",
        args.arch,
        "--timeout",
        args.timeout,
        *sum((["--lab", lab] for lab in labs), []),
        *args.batch_options,
    ]
    log_path = args.out / f"throughput-{args.name}.log"
    started = time.time()
    sampler = Sampler(started, beside(log_path, "samples"))
    sampler.start()
    commands = (
        cpu_by_command.CommandCpu(started, beside(log_path, "commands"))
        if args.cpu_by_command
        else None
    )
    if commands:
        commands.start()
    with open(log_path, "w") as log:
        batch = subprocess.Popen(
            cmd,
            cwd=args.grader,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        cut = False
        try:
            code = batch.wait(timeout=args.deadline)
        except subprocess.TimeoutExpired:
            cut = True
            batch.send_signal(signal.SIGINT)
            try:
                code = batch.wait(timeout=60)
            except subprocess.TimeoutExpired:
                batch.kill()
                code = batch.wait()
    seconds = time.time() - started
    sampler.stop()
    if commands:
        commands.stop()
    graded = sorted(p.parent.name for p in (work / "out" / "students").glob("*/result.json"))
    problems = check_class.check(work / "out", args.copies, labs)
    if cut:  # the students it had no time for are not its mistakes
        problems = [p for p in problems if p.split(":")[0] in graded]
    problems = [p for p in problems if ":" not in p or p.split(":")[0] in names]
    student_labs = len(graded if cut else subs) * len(labs)
    kept = keep_problems(work / "out", problems, args.out / f"throughput-{args.name}-problems")
    log_text = log_path.read_text()
    steady = steady_rate(log_text)
    figures = {
        "name": args.name,
        "grader": str(args.grader),
        "command": cmd,
        "exit_code": code,
        "cut_at_deadline": cut,
        "seconds": round(seconds, 1),
        "students_graded": len(graded),
        "student_labs": student_labs,
        "student_labs_per_hour": round(student_labs * 3600 / seconds),
        "steady": steady,
        "complete": complete_rate(log_text, steady),
        "per_minute": per_minute(log_text, steady),
        "done_rate": done_rate(log_text),
        "busy_while_steady": busy_between(sampler.samples, steady),
        "cpu_by_command": commands and cpu_by_command.by_command(commands.samples, steady),
        "gpu_holds": gpu_holds(log_text, steady),
        "holds_by_kind": holds_by_kind(log_text),
        "phases": phases(log_text, steady),
        "student_latency": student_latency(log_text),
        "retimed": retimed(log_text),
        "timed_failures": timed_failures(log_text),
        "fractions": fractions(work / "out", graded),
        "samples": sampler.samples,
        "check_problems": problems,
        "problem_files": kept,
        "log_tail": log_text[-4000:],
    }
    (args.out / f"throughput-{args.name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    # The class report (issue 16 asks for it beside the figures); self-contained.
    # A batch cut at the deadline wrote none: this grader writes it for the
    # students graded (another commit's grader may read results differently).
    report = work / "out" / "report.html"
    if not report.exists() and graded and args.grader.resolve() == REPO:
        report = write_report(work / "out", graded, labs)
    if report.exists():
        shutil.copyfile(report, args.out / f"throughput-{args.name}-report.html")
    busy = figures["busy_while_steady"]
    print(
        f"throughput {args.name}: {student_labs} student-labs in {seconds:.0f} s"
        + (" (cut at the deadline)" if cut else "")
        + f", {figures['student_labs_per_hour']} per hour"
        + (f" ({steady['per_hour']} per hour after the set-up)" if steady else "")
        + (
            f" ({figures['complete']['per_hour']} complete, "
            f"{figures['complete']['timed_turns']} timed turns, "
            f"{figures['complete']['unfinished_at_end']} labs of students unfinished at the end)"
            if figures["complete"]
            else ""
        )
        + (
            f" ({figures['done_rate']['per_hour']} per hour from the first student done "
            f"to the last, {figures['done_rate']['students']} students)"
            if figures["done_rate"]
            else ""
        )
        + (
            f" (CPU {busy['cpu_busy']:.0%} busy, GPU {busy['gpu_util']}% used, medians)"
            if busy
            else ""
        )
        + (
            " (core-seconds: "
            + ", ".join(f"{c} {v}" for c, v in list(by_cmd["commands"].items())[:6])
            + f"; {by_cmd.get('covered', 0):.0%} of the busy time named)"
            if (by_cmd := figures["cpu_by_command"])
            else ""
        )
        + "; outcomes "
        + ("as expected" if not problems else f"WRONG: {problems}")
    )
    return 1 if problems else 0


def keep_problems(out: Path, problems: list[str], dest: Path) -> list[str]:
    """The result.json and feedback.md of each student whose outcome was not as
    expected, copied to dest/NAME/: the batch's folder goes with the machine,
    and with it the case, seed and values that would replay the failure, which
    is otherwise lost with the machine.
    Returns the files copied, relative to dest's parent."""
    kept = []
    for name in sorted({p.split(":")[0] for p in problems}):
        for file in ("result.json", "feedback.md"):
            src = out / "students" / name / file
            if src.is_file():
                (dest / name).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest / name / file)
                kept.append(str((dest / name / file).relative_to(dest.parent)))
    return kept


def graded_labs(which: str) -> list[str]:
    """--labs: class.toml's labs, the course's one-GPU labs, or those named."""
    if which == "class":
        return tomllib.loads((HERE / "class.toml").read_text())["labs"]
    if which == "course":
        return [lab.id for lab in labmeta.load().labs if not lab.spans_gpus]
    return [labmeta.load().lab(name.strip()).id for name in which.split(",") if name.strip()]


def fractions(out: Path, students: list[str]) -> dict[str, dict]:
    """Per lab, the fraction of the copy ceiling each graded student's timed
    part measured, and the reference's from the batch's preflight: whether a
    loaded machine (a second GPU's runs beside a timed turn, more workers)
    moves what a student is graded on. Read as the results are written, not
    as the grader's classes read them (another commit's grader may differ)."""
    labs: dict[str, dict] = {}
    for student in students:
        try:
            result = json.loads((out / "students" / student / "result.json").read_text())
        except (OSError, ValueError):
            continue
        for lab in result.get("labs", []) if isinstance(result, dict) else []:
            if not isinstance(lab, dict) or lab.get("fraction") is None:
                continue
            entry = labs.setdefault(str(lab.get("lab")), {"reference": None, "students": {}})
            entry["students"][student] = lab["fraction"]
            if lab.get("reference_fraction") is not None:
                entry["reference"] = lab["reference_fraction"]
    return labs


def fraction_spread(labs: dict[str, dict]) -> dict[str, dict]:
    """Per lab of `fractions`: the students' lowest, median and highest
    fraction against the reference's, and how many lie within 5% of it."""
    spread = {}
    for lab, entry in labs.items():
        got = sorted(entry["students"].values())
        ref = entry["reference"]
        if not got:
            continue
        spread[lab] = {
            "reference": ref,
            "students": len(got),
            "min": got[0],
            "median": statistics.median(got),
            "max": got[-1],
            "within_5pct": None if not ref else sum(abs(f / ref - 1) <= 0.05 for f in got),
        }
    return spread


def write_report(out: Path, students: list[str], lab_ids: list[str]) -> Path:
    sys.path.insert(0, str(REPO))
    from grader import labmeta
    from grader.batch import class_report
    from grader.infra.store import load_result

    results = [load_result(out / "students" / s / "result.json") for s in students]
    course = labmeta.load()
    return class_report.write(
        out, [r for r in results if r is not None], [course.lab(i) for i in lab_ids]
    )


# A lab's line: "w3 alice 04_sequential_addressing: graded {'build': 2.1, ...}"
# (when, whose, and the seconds of each phase).
_TRACE = re.compile(r"^\[trace \+([0-9.]+) s\] \S+ (\S+) \d\d_\w+: \w+ (\{.*\})?")
_INTERRUPTED = re.compile(r"^\[trace \+([0-9.]+) s\] interrupted$")


def _interrupted_at(log: str) -> float:
    """When the batch was interrupted (its trace line), or infinity."""
    return min(
        (float(m.group(1)) for m in map(_INTERRUPTED.match, log.splitlines()) if m),
        default=float("inf"),
    )


def steady_rate(log: str) -> dict | None:
    """Student-labs an hour between the first lab graded and the last before
    the batch was interrupted (GRADER_TRACE lines): the labs that end after
    the interrupt were killed, not graded."""
    stop = _interrupted_at(log)
    times = [
        t for m in map(_TRACE.match, log.splitlines()) if m and (t := float(m.group(1))) < stop
    ]
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    # The first lab's finish opens the span; it was graded mostly before it.
    labs, span = len(times) - 1, times[-1] - times[0]
    return {
        "student_labs": labs,
        "seconds": round(span, 1),
        "per_hour": round(labs * 3600 / span),
        "from": times[0],
        "to": times[-1],
    }


def per_minute(log: str, steady: dict | None) -> list[int] | None:
    """The labs graded in each whole minute of the steady span, from its start:
    where the rate dips (every worker's students waiting for their timed turns
    at once, the first of them in a wave), which a rate over the span hides and two runs must share to compare."""
    if not steady:
        return None
    times = [float(m.group(1)) for m in map(_TRACE.match, log.splitlines()) if m]
    minutes = int((steady["to"] - steady["from"]) // 60)
    counts = [0] * minutes
    for t in times:
        k = int((t - steady["from"]) // 60)
        if 0 <= k < minutes:
            counts[k] += 1
    return counts


_DONE = re.compile(r"^\[trace \+([0-9.]+) s\] \S+ (\S+): done$")


def _done_at(log: str) -> dict[str, float]:
    """When each student was done (batch_worker's "done" line), for those done
    before the interrupt."""
    stop = _interrupted_at(log)
    return {
        m.group(2): float(m.group(1))
        for m in map(_DONE.match, log.splitlines())
        if m and float(m.group(1)) < stop
    }


def complete_rate(log: str, steady: dict | None) -> dict | None:
    """Over the steady span: the student-labs of the students done in it (their
    timed parts run and their results complete; batch_worker's "done" line) an
    hour, how many timed turns ended in it, and how many labs were graded by its
    end whose students were not done then (the rest of the student's labs, or a
    timed turn, still to come).
    Lines after the interrupt are left out (their runs were killed)."""
    if not steady:
        return None
    stop = _interrupted_at(log)
    lo, hi = steady["from"], steady["to"]
    labs: dict[str, int] = {}  # student -> labs graded by the end of the span
    done = _done_at(log)
    turns = 0
    for line in log.splitlines():
        if m := _TRACE.match(line):
            if float(m.group(1)) <= min(hi, stop):
                labs[m.group(2)] = labs.get(m.group(2), 0) + 1
        elif (m := _HOLD.match(line)) and m.group(2) == "timed" and m.group(3):
            turns += lo < float(m.group(1)) <= min(hi, stop)
    finished = sum(labs.get(s, 0) for s, t in done.items() if lo < t <= hi)
    span = hi - lo
    return {
        "student_labs": finished,
        "seconds": round(span, 1),
        "per_hour": round(finished * 3600 / span),
        "timed_turns": turns,
        "unfinished_at_end": sum(n for s, n in labs.items() if not done.get(s, hi + 1) <= hi),
    }


def done_rate(log: str) -> dict | None:
    """The class's own pace, from the first student done to the last before the
    interrupt: the labs of the students done after the first, an hour. Unlike
    the steady rate it has every timed turn of those students in it, and unlike
    the complete rate no pipeline filling: a class of S students of L labs
    takes about `first` + S * L / per_hour hours. None with fewer than two done."""
    stop = _interrupted_at(log)
    labs: dict[str, int] = {}
    for m in map(_TRACE.match, log.splitlines()):
        if m and float(m.group(1)) < stop:
            labs[m.group(2)] = labs.get(m.group(2), 0) + 1
    done = sorted((t, s) for s, t in _done_at(log).items())
    if len(done) < 2 or done[-1][0] <= done[0][0]:
        return None
    student_labs = sum(labs.get(s, 0) for _, s in done[1:])
    span = done[-1][0] - done[0][0]
    return {
        "students": len(done) - 1,
        "student_labs": student_labs,
        "seconds": round(span, 1),
        "per_hour": round(student_labs * 3600 / span),
        "first": done[0][0],
    }


def _timing(m: re.Match) -> dict[str, float]:
    """A lab's trace line's phases (lab_grading.Phases, printed as a dict):
    {} where it has none or they do not read."""
    try:
        timing = json.loads((m.group(3) or "{}").replace("'", '"'))
        return {str(k): float(v) for k, v in timing.items()}
    except (json.JSONDecodeError, TypeError, ValueError, AttributeError):
        return {}


# timed_stage.retimed's line: a correct lab short of its performance points, timed again.
_RETIMED = re.compile(
    r"^\[trace \+[0-9.]+ s\] \S+ (\d\d_\w+): timed again, ([0-9.]+) then (\S+)$", re.M
)


# timed_stage.inconsistent's line: a timed test failed after the untimed passed.
_INCONSISTENT = re.compile(
    r"^\[trace \+[0-9.]+ s\] \S+ (\d\d_\w+): a timed test failed \((.*)\); "
    r"timed again: (right in every call|failed again)$",
    re.M,
)


def timed_failures(log: str) -> list[dict]:
    """Each lab whose timed run failed a test after its untimed tests passed:
    the failure, and whether a second run was right (the lab then an error,
    not a grade) or failed again (the failure counts)."""
    return [
        {"lab": m.group(1), "failure": m.group(2), "second_right": m.group(3).startswith("right")}
        for m in _INCONSISTENT.finditer(log)
    ]


def retimed(log: str) -> list[dict]:
    """Each lab timed again, with its two figures (the second None where that
    run gave none): how often a timed run fell short, and by how much."""
    return [
        {
            "lab": m.group(1),
            "first": float(m.group(2)),
            "second": None if m.group(3) == "None" else float(m.group(3)),
        }
        for m in _RETIMED.finditer(log)
    ]


def student_latency(log: str) -> dict | None:
    """How long a student took, for the students done before the interrupt:
    from its first lab's start (that lab's end less its phases) to its last
    lab graded (`untimed`: one worker grades a student's labs one after
    another), and from there to done (`turn_wait`: its timed parts waiting for
    their turn, and the turn). Medians and the longest, in seconds. A span
    shorter than a student's whole time measures no complete rate: a class of
    11 labs a student took longer than a device call (tests/submissions/
    detached.sh)."""
    stop = _interrupted_at(log)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for m in map(_TRACE.match, log.splitlines()):
        if m and (t := float(m.group(1))) < stop:
            spent = sum(_timing(m).values())
            first.setdefault(m.group(2), t - spent)
            last[m.group(2)] = t
    done = _done_at(log)
    students = [s for s in done if s in first]
    if not students:
        return None
    untimed = [last[s] - first[s] for s in students]
    waits = [done[s] - last[s] for s in students]
    total = [done[s] - first[s] for s in students]
    return {
        "students": len(students),
        **{
            f"{name}_{how}": round(f(v), 1)
            for name, v in (("untimed", untimed), ("turn_wait", waits), ("total", total))
            for how, f in (("median", statistics.median), ("max", max))
        },
    }


def phases(log: str, steady: dict | None) -> dict[str, dict] | None:
    """Over the steady span, per phase of a worker's lab (build, policy, tests,
    sanitizer: lab_grading.Phases, the lab's trace line): how many labs had it,
    its median and its total seconds. Where a worker's time goes, and so what
    to make cheaper or run beside what."""
    if not steady:
        return None
    seconds: dict[str, list[float]] = {}
    for m in map(_TRACE.match, log.splitlines()):
        if m and steady["from"] <= float(m.group(1)) <= steady["to"]:
            for name, value in _timing(m).items():
                seconds.setdefault(name, []).append(value)
    return {
        name: {
            "labs": len(v),
            "median": round(statistics.median(v), 2),
            "total": round(sum(v), 1),
        }
        for name, v in sorted(seconds.items())
    }


# "w3 tests: waited 1.2 s, ran 2.1 s, started 0.4 s", "w6-timed timed alone: ...":
# what a run held (from when it got it: a slot, or the GPU alone), for how long,
# and how long it waited and started (a student's timed parts start before they
# hold the GPU alone, gate.Gate.timed_turn; a run again alone has no "started":
# its start is in "ran").
_HOLD = re.compile(
    r"^\[trace \+([0-9.]+) s\] \S+ (tests|sanitizer \w+|timed)( alone)?: "
    r"waited ([0-9.]+) s, ran ([0-9.]+) s(?:, started ([0-9.]+) s)?"
)


def gpu_holds(log: str, steady: dict | None) -> dict | None:
    """Over the steady span: the mean number of shared runs in a slot, and the
    shares of the time in which a run held a GPU alone, in which no run held
    anything, and in which none did while a timed run waited for the GPU or
    started (a drain's cost: shared runs are held back then; summed over the
    machine's GPUs: the lines do not say which)."""
    if not steady:
        return None
    lo, hi = steady["from"], steady["to"]
    shared, alone, pending = [], [], []
    for m in map(_HOLD.match, log.splitlines()):
        if m:
            end, ran = float(m.group(1)), float(m.group(5))
            (alone if m.group(3) else shared).append((max(lo, end - ran), min(hi, end)))
            if m.group(2) == "timed":
                before = float(m.group(4)) + float(m.group(6) or 0)
                pending.append((max(lo, end - ran - before), min(hi, end - ran)))
    shared, alone, pending = ([(a, b) for a, b in x if b > a] for x in (shared, alone, pending))
    span = hi - lo
    held = _covered(shared + alone)
    return {
        "runs_in_slots": round(sum(b - a for a, b in shared) / span, 2),
        "alone_share": round(_covered(alone) / span, 3),
        "idle_share": round(1 - held / span, 3),
        "idle_while_timed_waits": round((_covered(shared + alone + pending) - held) / span, 3),
    }


def holds_by_kind(log: str) -> dict[str, dict]:
    """Per kind of run (tests, each compute-sanitizer tool, the timed runs
    alone, a run again alone): how many, the seconds they held a slot or the
    GPU in all and the median, and the seconds they spent starting and waiting
    in all. Which kind to make cheaper next. Runs that end after the batch
    was interrupted are left out: they were killed."""
    stop = _interrupted_at(log)
    kinds: dict[str, list[tuple[float, float, float]]] = {}
    for m in map(_HOLD.match, log.splitlines()):
        if m and float(m.group(1)) < stop:
            name = m.group(2) + (m.group(3) or "")
            kinds.setdefault(name, []).append(
                (float(m.group(5)), float(m.group(6) or 0), float(m.group(4)))
            )
    out = {}
    for name, runs in sorted(kinds.items()):
        ran = [r[0] for r in runs]
        out[name] = {
            "runs": len(runs),
            "held_seconds": round(sum(ran), 1),
            "held_median": round(statistics.median(ran), 2),
            "started_seconds": round(sum(r[1] for r in runs), 1),
            "waited_seconds": round(sum(r[2] for r in runs), 1),
        }
    return out


def _covered(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of the intervals."""
    total, reach = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


class Sampler(cpu_by_command.Periodic):
    """Every `every` seconds: the share of the CPU cores busy since the last
    sample (/proc/stat) and each GPU's utilisation (nvidia-smi), with the
    seconds since `started` (the batch's trace clock starts within a second).
    Only the cores this process may use and the GPUs CUDA_VISIBLE_DEVICES
    leaves: issue16_gpu.sh's ONE_GPU=1 grades on one GPU and half the cores of
    a two-GPU host, and the whole machine's figures would read it half as busy
    as it is."""

    def __init__(self, started: float, path: Path | None = None, every: float = 2.0) -> None:
        super().__init__(every, path)
        self.started = started

    def first(self) -> None:
        self._last = _cpu_times()
        self._gpus = set(gpus.visible_gpus())  # the grader's reading of CUDA_VISIBLE_DEVICES

    def sample(self) -> dict:
        now = _cpu_times()
        smi = _smi()
        taken = {
            "t": round(time.time() - self.started, 1),
            "cpu_busy": cpu_busy(self._last, now),
            "gpu_util": visible_util(smi, self._gpus),
            "gpu_mem_mib": visible_memory(smi, self._gpus),
        }
        self._last = now
        return taken


# The CPU time fields of the cores this process may use, and the share busy
# between two samples: the grader's own look at the machine's load
# (grader/infra/cpu_busy.py).
def _cpu_times() -> list[int]:
    return machine_load.stat(set(os.sched_getaffinity(0)))


cpu_busy = machine_load.share


def _smi() -> str:
    """nvidia-smi's `uuid, utilization, memory used (MiB)` line of each GPU."""
    query = "--query-gpu=uuid,utilization.gpu,memory.used"
    try:
        done = subprocess.run(
            ["nvidia-smi", query, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


def _visible_column(smi: str, visible: set[str], column: int) -> list[int]:
    found = []
    for line in smi.splitlines():
        fields = [part.strip() for part in line.split(",")]
        if len(fields) > column and fields[column].isdigit() and fields[0] in visible:
            found.append(int(fields[column]))
    return found


def visible_util(smi: str, visible: set[str]) -> list[int]:
    """The utilisation of each GPU in nvidia-smi's `uuid, utilization[, memory]`
    lines whose UUID is in `visible` (gpus.visible_gpus())."""
    return _visible_column(smi, visible, 1)


def visible_memory(smi: str, visible: set[str]) -> list[int]:
    """The MiB of memory in use on each of those GPUs (every process's: the
    kept checkers' contexts among them, checker_service.py)."""
    return _visible_column(smi, visible, 2)


def beside(log: Path, what: str) -> Path:
    """Where a sampler's samples go, beside the run's log: `samples` (CPU and
    GPU) and `commands` (--cpu-by-command's)."""
    return log.with_name(f"{log.stem}-{what}.jsonl")


def busy_between(samples: list[dict], steady: dict | None) -> dict | None:
    """The median CPU share busy and GPU utilisation (the mean over GPUs) of
    the samples within the steady span."""
    if not steady:
        return None
    inside = [s for s in samples if steady["from"] <= s["t"] <= steady["to"]]
    cpu = sorted(s["cpu_busy"] for s in inside if s["cpu_busy"] is not None)
    gpu = sorted(sum(s["gpu_util"]) / len(s["gpu_util"]) for s in inside if s["gpu_util"])
    if not cpu:
        return None
    busy = {
        "samples": len(inside),
        "cpu_busy": cpu[len(cpu) // 2],
        "gpu_util": round(gpu[len(gpu) // 2]) if gpu else None,
    }
    memory = [max(s["gpu_mem_mib"]) for s in inside if s.get("gpu_mem_mib")]
    if memory:  # the most any one GPU had in use, and its median
        busy["gpu_mem_mib_max"] = max(memory)
        busy["gpu_mem_mib_median"] = sorted(memory)[len(memory) // 2]
    return busy


if __name__ == "__main__":
    sys.exit(main())
