"""batch is fast by default: the machine decides how many students share a GPU,
and --help shows only what an instructor decides (the maintainers' knobs are
still accepted)."""

import contextlib
import io

import pytest

from grader.commands import arguments
from grader.batch import config as batch_config
from grader.infra import gpus

HIDDEN = [
    "--jobs-per-gpu",
    "--gpu-runs",
    "--shared-call-timeout",
    "--gpu-connections",
    "--sanitizer-places",
    "--no-kept-checkers",
    "--keep-timed-checkers",
]


@pytest.mark.parametrize(
    "cores,gpu_count,expected",
    [(16, 1, 16), (32, 2, 16), (64, 1, 16), (8, 1, 8), (2, 1, 2), (2, 4, 1), (1, 1, 1)],
)
def test_students_per_gpu_follow_the_cores(cores, gpu_count, expected):
    assert gpus.students_per_gpu(gpu_count, cores=cores) == expected


def test_the_default_config_leaves_the_choice_to_the_machine(tmp_path):
    assert batch_config.BatchConfig(out=tmp_path).jobs_per_gpu is None
    args = arguments.build_parser("x").parse_args(["batch", "s", "--out", str(tmp_path)])
    assert args.jobs_per_gpu is None


def test_help_shows_only_what_an_instructor_decides():
    parser = arguments.build_parser("x")
    text = io.StringIO()
    with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
        parser.parse_args(["batch", "--help"])
    shown = text.getvalue()
    for option in HIDDEN:
        assert option not in shown, option
    for option in ("--out", "--lab", "--timeout", "--gpus", "--sandbox", "--slurm", "--no-perf"):
        assert option in shown, option


def test_the_maintainers_knobs_are_still_accepted(tmp_path):
    args = arguments.build_parser("x").parse_args(
        ["batch", "s", "--out", str(tmp_path), "--jobs-per-gpu", "3", "--gpu-runs", "2"]
        + ["--sanitizer-places", "5", "--keep-timed-checkers", "--no-kept-checkers"]
    )
    assert (args.jobs_per_gpu, args.gpu_runs, args.sanitizer_places) == (3, 2, 5)
    assert args.keep_timed_checkers and args.no_kept_checkers
