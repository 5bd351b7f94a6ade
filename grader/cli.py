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

from . import labmeta
from .commands import arguments
from .infra import log, toolchain
from .status import LabStatus


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
    from .batch import orchestrator as batch, config as batch_config
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
        gpu_runs=args.gpu_runs,
        shared_call_timeout=args.shared_call_timeout,
        gpu_connections=args.gpu_connections,
        sanitizer_places=args.sanitizer_places,
        kept_checkers=not args.no_kept_checkers,
        keep_timed_checkers=args.keep_timed_checkers,
    )

    def on_term(signum, frame):
        raise batch_config.Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if config.slurm:
            from .batch import slurm_batch

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
    from .batch import slurm_task

    return slurm_task.run_task(args.manifest, args.index)


def _bench(args: argparse.Namespace) -> int:
    from .commands import bench

    return bench.run(args.out, args.build_dir, args.arch)


def _profile(args: argparse.Namespace) -> int:
    from .commands import profile

    options = profile.ProfileOptions(
        build_dir=args.build_dir,
        arch=args.arch,
        log2n=args.log2n,
        impl=args.impl,
        json_path=args.json,
        timeout=args.timeout,
        references_only=args.references,
    )
    return profile.run(args.labs, options)


def _hint(args: argparse.Namespace) -> int:
    from .commands import hint

    return hint.run(args.lab, again=args.again)


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
    from .similarity import command

    return command.run(args.out, args.corpus or [], args.threshold, args.min_match, args.lab)


def _gpucheck(args: argparse.Namespace) -> int:
    from .commands import gpucheck
    from .gpucheck import summary as gpucheck_summary

    if args.merge:
        from .infra import evidence
        from .infra.evidence.merge import merge

        merged = merge(args.merge)
        evidence.dump(merged, args.out / "gpucheck.json")
        print(gpucheck_summary.summary_table(merged))
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
    sandbox_labs, attack_labs = (
        tuple(course.lab(x).id for x in given.split(",")) if given else ()
        for given in (args.sandbox_labs, args.attack_labs)
    )
    return gpucheck.run(
        out_dir=args.out,
        build_dir=args.build_dir,
        arch=args.arch,
        parts=parts,
        sandbox_labs=sandbox_labs,
        attack_labs=attack_labs,
    )


# By the subcommand's name (args.command), so that the parser in
# grader/commands/arguments.py knows nothing of the code that runs each one.
HANDLERS = {
    "grade": _grade,
    "batch": _batch,
    "slurm-task": _slurm_task,
    "bench": _bench,
    "profile": _profile,
    "hint": _hint,
    "calibrate": _calibrate,
    "release": _release,
    "selftest": _selftest,
    "similarity": _similarity,
    "gpucheck": _gpucheck,
}


def main(argv: list[str] | None = None) -> int:
    ap = arguments.build_parser(__doc__.split("\n\n")[0])
    args = ap.parse_args(argv)
    log.install()  # progress and traces print as they come (infra/log.py)
    try:
        return HANDLERS[args.command](args)
    except (toolchain.SetupError, labmeta.CourseFileError, KeyError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
