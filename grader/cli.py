"""Command line of the grader: python3 -m grader <subcommand> ...

Each subcommand is a thin layer over an importable function; exit codes:
  0  everything graded and passed
  1  something was graded and failed (a test, a build, a policy check)
  2  bad usage or set-up (unknown lab, meson missing and not installable)
  3  a fault of the machine or of the grader stopped some grading (nothing
     was recorded as the student's for it)
  4  nothing failed, but some labs could not be graded here (no GPU)
  5  profile: this user may not read the GPU's performance counters
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from . import labmeta
from .infra import toolchain
from .status import LabStatus


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text}")
    return value


def _grade(args: argparse.Namespace) -> int:
    from .commands import grade

    report = grade.grade(
        args.labs or None,
        build_dir=args.build_dir,
        impl=args.impl,
        timeout=args.timeout,
        perf=not args.no_perf,
        seed=args.seed,
        sanitize=not args.no_sanitize,
    )
    grade.write_json(report, args.json)
    print()
    text = grade.details(report)
    if text:
        print(text + "\n")
    print(f"report: {args.json}\n")
    print(grade.table(report))
    if any(r.status == LabStatus.ERROR for r in report.labs):
        print(
            "\nSome labs were not graded because of a fault of this machine or of the "
            "grader (see above)."
        )
        return 3
    if any(
        r.status in (LabStatus.BUILD_FAILED, LabStatus.POLICY, LabStatus.MISSING)
        or r.tests_failed
        or (r.status == LabStatus.GRADED and r.points < r.max_points and r.fraction is not None)
        for r in report.labs
    ):
        return 1
    if any(r.status == LabStatus.SKIPPED for r in report.labs):
        print("\nSome labs need an NVIDIA GPU and were built but not run here.")
        return 4
    return 0


def _batch(args: argparse.Namespace) -> int:
    from .commands import batch, batch_config
    from .engine import submissions
    from .infra import sandbox

    roster = submissions.read_roster(args.roster) if args.roster else None
    config = batch_config.BatchConfig(
        out=args.out,
        lab_ids=args.lab or None,
        timeout=args.timeout,
        gpus=args.gpus.split(",") if args.gpus else None,
        arch=args.arch,
        perf=not args.no_perf,
        sandbox=args.sandbox,
        sandbox_limits=sandbox.Limits.parse(args.sandbox_limit),
        sanitize=not args.no_sanitize,
        roster=roster,
        preflight=not args.no_preflight,
        accept_ceiling=args.accept_ceiling,
        slurm=args.slurm,
        partition=args.partition,
        slurm_args=args.slurm_arg,
        slots=args.slots,
        wait=not args.no_wait,
        jobs_per_gpu=args.jobs_per_gpu,
    )

    def on_term(signum, frame):
        raise batch_config.Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if config.slurm:
            from .commands import slurm_batch

            results = slurm_batch.run_batch(args.submissions, config)
        else:
            results = batch.run_batch(args.submissions, config)
    except batch_config.BatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except (KeyboardInterrupt, batch_config.Interrupted) as e:
        print(
            "\n[batch] interrupted: every result already written is kept, nothing half-graded "
            "was saved; run the same command again to resume",
            file=sys.stderr,
        )
        return e.exit_code if isinstance(e, batch_config.Interrupted) else 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    not_graded = [r.student for r in results if r.error]
    if not_graded:
        print(
            f"[batch] NOT GRADED ({len(not_graded)}): {', '.join(not_graded)}; "
            "run the same command again to grade them",
            file=sys.stderr,
        )
    return 1 if not_graded else 0


def _slurm_task(args: argparse.Namespace) -> int:
    from .commands import slurm_task

    return slurm_task.run_task(args.manifest, args.index)


def _bench(args: argparse.Namespace) -> int:
    from .commands import bench

    return bench.run(args.out, args.build_dir, args.arch)


def _profile(args: argparse.Namespace) -> int:
    from .commands import profile

    return profile.run(
        args.labs,
        build_dir=args.build_dir,
        arch=args.arch,
        log2n=args.log2n,
        impl=args.impl,
        json_path=args.json,
        timeout=args.timeout,
        references_only=args.references,
    )


def _calibrate(args: argparse.Namespace) -> int:
    from .commands import calibrate

    return calibrate.run(
        args.build_dir, args.arch, args.repeats, args.margin, args.write, args.json
    )


def _release(args: argparse.Namespace) -> int:
    from .commands import release

    return release.run(args.dest, not args.no_check)


def _selftest(args: argparse.Namespace) -> int:
    from .commands import selftest

    return selftest.run(build_dir=args.build_dir, options=args.meson_option or [])


def _similarity(args: argparse.Namespace) -> int:
    from .commands.similarity import command

    return command.run(args.out, args.corpus or [], args.threshold, args.min_match, args.lab)


def _gpucheck(args: argparse.Namespace) -> int:
    from .commands import gpucheck

    if args.merge:
        from .infra import evidence
        from .infra.evidence.merge import merge

        merged = merge(args.merge)
        evidence.dump(merged, args.out / "gpucheck.json")
        print(gpucheck.summary_table(merged))
        return 0
    parts = tuple(args.parts.split(",")) if args.parts else gpucheck.PARTS
    unknown = set(parts) - set(gpucheck.PARTS)
    if unknown:
        raise ValueError(
            f"unknown part(s) {', '.join(sorted(unknown))}: the parts are "
            f"{', '.join(gpucheck.PARTS)}"
        )
    # An unknown lab is a KeyError: main() prints it in one line, exit 2.
    course = labmeta.load()
    sandbox_labs = (
        tuple(course.lab(x).id for x in args.sandbox_labs.split(",")) if args.sandbox_labs else ()
    )
    return gpucheck.run(
        out_dir=args.out,
        build_dir=args.build_dir,
        arch=args.arch,
        parts=parts,
        sandbox_labs=sandbox_labs,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m grader", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="build, run and score your labs")
    g.add_argument("labs", nargs="*", help="lab ids or numbers (default: all), e.g. 04")
    g.add_argument(
        "--impl",
        default="labs",
        choices=["labs", "solutions"],
        help="grade labs/ (yours) or solutions/ (the reference)",
    )
    g.add_argument("--build-dir", type=Path, default=toolchain.REPO / "build")
    g.add_argument("--json", type=Path, default=toolchain.REPO / "build" / "grade-report.json")
    g.add_argument("--timeout", type=float, default=600.0, help="seconds per lab")
    g.add_argument("--seed", type=int, help="replay a run's inputs (printed in the report)")
    g.add_argument("--no-perf", action="store_true", help="skip the bandwidth tests")
    g.add_argument(
        "--no-sanitize",
        action="store_true",
        help="skip the small cases under compute-sanitizer (memcheck, racecheck, "
        "synccheck), which run by default on GPU labs; findings cost the lab "
        "its correctness points",
    )
    g.set_defaults(func=_grade)

    b = sub.add_parser("batch", help="grade many submissions (folders, archives, git repos)")
    b.add_argument("submissions", nargs="+")
    b.add_argument("--out", type=Path, required=True, help="gradebook, feedback, worker trees")
    b.add_argument("--lab", action="append", help="grade only these labs (repeatable)")
    b.add_argument("--timeout", type=float, default=600.0, help="seconds per lab")
    b.add_argument("--gpus", help="CUDA device ids to use, e.g. 0,1 (default: all)")
    b.add_argument("--arch", default="auto", help="gpu_arch for meson")
    b.add_argument(
        "--jobs-per-gpu",
        type=_positive,
        default=1,
        metavar="K",
        help="students graded at once on each GPU, each with its own build tree; "
        "their timed tests still run alone (default 1; see the README for "
        "when more pays)",
    )
    b.add_argument("--no-perf", action="store_true", help="skip the bandwidth tests")
    b.add_argument(
        "--no-sanitize",
        action="store_true",
        help="skip the small cases under compute-sanitizer (on by default)",
    )
    b.add_argument(
        "--roster",
        type=Path,
        help="CSV of submission,student_id: the ids the gradebook uses (default: "
        "each submission's folder or repository name, which must be unique)",
    )
    b.add_argument(
        "--no-preflight",
        action="store_true",
        help="do not grade the reference solutions first (they must pass in the "
        "batch's own setting, or the batch stops)",
    )
    b.add_argument(
        "--accept-ceiling",
        action="store_true",
        help="grade even when the measured copy ceiling is more than 15%% off the "
        "course's calibration for this GPU",
    )
    b.add_argument(
        "--sandbox",
        action="store_true",
        help="build and run each submission in a bubblewrap sandbox: an unprivileged "
        "user, no network, only its own folder writable, limits on CPU, memory, "
        "processes and output",
    )
    b.add_argument(
        "--sandbox-limit",
        action="append",
        metavar="KEY=VALUE",
        help="change a sandbox limit: memory_mb, processes, output_mb, cpu_seconds, "
        "open_files (repeatable)",
    )
    b.add_argument(
        "--slurm",
        action="store_true",
        help="grade on a Slurm cluster: one job-array task per submission",
    )
    b.add_argument("--partition", help="Slurm partition (default: the cluster's default)")
    b.add_argument(
        "--slurm-arg",
        action="append",
        metavar="OPTION",
        help="another sbatch option, e.g. --slurm-arg=--account=cs101 (repeatable)",
    )
    b.add_argument(
        "--slots",
        type=int,
        default=4,
        help="Slurm: tasks running at once, each with its own build tree (default 4)",
    )
    b.add_argument(
        "--no-wait",
        action="store_true",
        help="Slurm: submit and return; run the same command again to follow the "
        "job and write the gradebook",
    )
    b.set_defaults(func=_batch)

    t = sub.add_parser(
        "slurm-task",
        help="(inside a Slurm job of batch --slurm) grade one submission of a manifest",
    )
    t.add_argument("manifest", type=Path)
    t.add_argument("--index", type=int, help="default: $SLURM_ARRAY_TASK_ID")
    t.set_defaults(func=_slurm_task)

    r = sub.add_parser("bench", help="every reference and CUB over 2^16..2^30, JSON and plots")
    r.add_argument("--out", type=Path, default=toolchain.REPO / "build" / "bench")
    r.add_argument("--build-dir", type=Path, default=toolchain.REPO / "build")
    r.add_argument("--arch", default="auto")
    r.set_defaults(func=_bench)

    p = sub.add_parser(
        "profile",
        help="your kernel under Nsight Compute beside the reference "
        "and the previous lab: the counters behind the GB/s",
    )
    p.add_argument("labs", nargs="*", help="lab ids or numbers (default: every GPU lab)")
    p.add_argument(
        "--impl",
        default="labs",
        choices=["labs", "solutions"],
        help="profile labs/ (yours) or solutions/ as yours",
    )
    p.add_argument(
        "--log2n",
        type=int,
        default=25,
        choices=range(16, 31),
        metavar="16..30",
        help="input size, log2 of the element count (default 25: 128 MiB of ints)",
    )
    p.add_argument(
        "--references",
        action="store_true",
        help="(instructor) profile only the reference solutions, in the shape of "
        "the committed run that a student release reads",
    )
    p.add_argument("--build-dir", type=Path, default=toolchain.REPO / "build")
    p.add_argument("--arch", help="gpu_arch for meson (default: the build folder's)")
    p.add_argument("--json", type=Path, default=toolchain.REPO / "build" / "profile.json")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per program under ncu")
    p.set_defaults(func=_profile)

    k = sub.add_parser("calibrate", help="thresholds for this GPU from the reference solutions")
    k.add_argument("--build-dir", type=Path, default=toolchain.REPO / "build")
    k.add_argument("--arch", default="auto")
    k.add_argument("--repeats", type=int, default=3)
    k.add_argument("--margin", type=float, default=0.85)
    k.add_argument("--write", action="store_true", help="update grader/labs.toml")
    k.add_argument(
        "--json",
        type=Path,
        help="where the figures go, as evidence (default: BUILD_DIR/calibration.json)",
    )
    k.set_defaults(func=_calibrate)

    e = sub.add_parser("release", help="write the student repository to DEST and check it")
    e.add_argument("dest", type=Path)
    e.add_argument("--no-check", action="store_true", help="skip grading lab 01 in DEST")
    e.set_defaults(func=_release)

    s = sub.add_parser(
        "selftest", help="the repository's own tests (solutions, skeletons, mutants, grader)"
    )
    s.add_argument("--build-dir", type=Path, default=toolchain.REPO / "build")
    s.add_argument(
        "-D",
        dest="meson_option",
        action="append",
        metavar="OPTION=VALUE",
        help="passed to meson setup, e.g. -D gpu_arch=sm_90",
    )
    s.set_defaults(func=_selftest)

    m = sub.add_parser(
        "similarity",
        help="(instructor) pairs of students, and students and "
        "known code, whose fenced code is alike; never a grade",
    )
    m.add_argument("out", type=Path, help="the --out folder of a batch")
    m.add_argument(
        "--corpus",
        type=Path,
        action="append",
        metavar="DIR",
        help="code to compare every student with besides the reference solutions: "
        "last term's submissions, public kernels dropped in a folder (repeatable)",
    )
    m.add_argument(
        "--threshold",
        type=float,
        help="share of one side's code found in the other that flags a pair (default 0.8)",
    )
    m.add_argument(
        "--min-match", type=int, help="normalised characters matched, at least (default 60)"
    )
    m.add_argument("--lab", action="append", help="only these labs (repeatable)")
    m.set_defaults(func=_similarity)

    c = sub.add_parser(
        "gpucheck",
        help="on a GPU machine: build everything, run every test "
        "and benchmark, write JSON evidence",
    )
    c.add_argument("--out", type=Path, required=True, help="folder for the JSON and logs")
    c.add_argument("--build-dir", type=Path, default=toolchain.REPO / "build-gpucheck")
    c.add_argument("--arch", default="native", help="gpu_arch for meson (default native)")
    c.add_argument(
        "--parts",
        help="comma-separated: labs, suites, bench, profile, attacks, "
        "sandbox, class (default: all)",
    )
    c.add_argument(
        "--sandbox-labs",
        metavar="LABS",
        help="the part sandbox grades only these labs, e.g. 01,02,03 (default: all)",
    )
    c.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="merge the gpucheck.json of partial runs into OUT/gpucheck.json",
    )
    c.set_defaults(func=_gpucheck)

    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except (toolchain.SetupError, labmeta.CourseFileError, KeyError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
