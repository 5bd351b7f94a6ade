"""The options of every subcommand of `python3 -m grader`, apart from what
runs them: the whole command line a user can type (and its --help) is read
here in one place, and grader/cli.py only turns parsed options into calls."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypeAlias

from ..infra import toolchain
from ..batch import config as batch_config

# What add_subparsers returns (argparse gives it no public name). Each function
# below build_parser adds one subcommand to it, with that subcommand's options.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text}")
    return value


def connections(text: str) -> int:
    """CUDA_DEVICE_MAX_CONNECTIONS: CUDA takes 1 to 32."""
    value = int(text)
    if not 1 <= value <= 32:
        raise argparse.ArgumentTypeError(f"must be 1 to 32 (CUDA's range), not {text}")
    return value


def build_parser(description: str) -> argparse.ArgumentParser:
    """The parser; `args.command` names the subcommand chosen."""
    ap = argparse.ArgumentParser(prog="python3 -m grader", description=description)
    sub = ap.add_subparsers(dest="command", required=True)
    for add in (
        _grade,
        _batch,
        _slurm_task,
        _bench,
        _profile,
        _hint,
        _calibrate,
        _release,
        _selftest,
        _similarity,
        _gpucheck,
    ):
        add(sub)
    return ap


def _grade(sub: Subcommands) -> None:
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


def _batch(sub: Subcommands) -> None:
    b = sub.add_parser("batch", help="grade many submissions (folders, archives, git repos)")
    b.add_argument("submissions", nargs="+")
    b.add_argument("--out", type=Path, required=True, help="gradebook, feedback, worker trees")
    b.add_argument("--lab", action="append", help="grade only these labs (repeatable)")
    b.add_argument("--timeout", type=float, default=600.0, help="seconds per lab")
    b.add_argument("--gpus", help="CUDA device ids to use, e.g. 0,1 (default: all)")
    b.add_argument("--arch", default="auto", help="gpu_arch for meson")
    _batch_tuning(b)
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
    _batch_slurm(b)


def _batch_tuning(b: argparse.ArgumentParser) -> None:
    """What the machine decides (batch chooses it) or maintainers measure with:
    accepted, not shown in --help (docs/maintainers.md describes them)."""
    hidden = argparse.SUPPRESS
    b.add_argument("--jobs-per-gpu", type=positive, default=None, help=hidden)
    b.add_argument("--gpu-runs", type=positive, default=None, help=hidden)
    b.add_argument("--shared-call-timeout", type=float, default=None, help=hidden)
    b.add_argument(
        "--gpu-connections", type=connections, default=batch_config.GPU_CONNECTIONS, help=hidden
    )
    b.add_argument("--sanitizer-places", type=positive, default=None, help=hidden)
    b.add_argument("--no-kept-checkers", action="store_true", help=hidden)
    b.add_argument("--keep-timed-checkers", action="store_true", help=hidden)


def _batch_slurm(b: argparse.ArgumentParser) -> None:
    """batch's options for grading on a Slurm cluster."""
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


def _slurm_task(sub: Subcommands) -> None:
    t = sub.add_parser(
        "slurm-task",
        help="(inside a Slurm job of batch --slurm) grade one submission of a manifest",
    )
    t.add_argument("manifest", type=Path)
    t.add_argument("--index", type=int, help="default: $SLURM_ARRAY_TASK_ID")


def _bench(sub: Subcommands) -> None:
    r = sub.add_parser("bench", help="every reference and CUB over 2^16..2^30, JSON and plots")
    r.add_argument("--out", type=Path, default=toolchain.REPO / "build" / "bench")
    r.add_argument("--build-dir", type=Path, default=toolchain.REPO / "build")
    r.add_argument("--arch", default="auto")


def _profile(sub: Subcommands) -> None:
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


def _hint(sub: Subcommands) -> None:
    h = sub.add_parser("hint", help="the next hint of a lab, one at a time (recorded)")
    h.add_argument("lab", help="lab id or number, e.g. 04")
    h.add_argument("--again", action="store_true", help="show the hints taken so far, take none")


def _calibrate(sub: Subcommands) -> None:
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


def _release(sub: Subcommands) -> None:
    e = sub.add_parser("release", help="write the student repository to DEST and check it")
    e.add_argument("dest", type=Path)
    e.add_argument("--no-check", action="store_true", help="skip grading lab 01 in DEST")


def _selftest(sub: Subcommands) -> None:
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


def _similarity(sub: Subcommands) -> None:
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


def _gpucheck(sub: Subcommands) -> None:
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
        "--attack-labs",
        metavar="LABS",
        help="the part attacks runs only these labs' cases, e.g. 09 (default: 07,09)",
    )
    c.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="merge the gpucheck.json of partial runs into OUT/gpucheck.json",
    )
