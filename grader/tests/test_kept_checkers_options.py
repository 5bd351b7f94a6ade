"""batch --no-kept-checkers and --keep-timed-checkers: from the command line to
the batch's config (grader/engine/sharing/checker_service.py); where a checker runs
moves no grade, so results graded either way stay reusable."""

from pathlib import Path

import pytest

from grader import cli
from grader.commands import arguments
from grader.batch import config as batch_config


@pytest.mark.parametrize(
    "flags, kept, timed",
    [
        ([], True, False),
        (["--no-kept-checkers"], False, False),
        (["--keep-timed-checkers"], True, True),
    ],
)
def test_the_options_reach_the_config(monkeypatch, tmp_path, flags, kept, timed):
    args = arguments.build_parser("test").parse_args(
        ["batch", "sub", "--out", str(tmp_path), "--jobs-per-gpu", "4", *flags]
    )
    seen = []
    from grader.batch import orchestrator as batch

    monkeypatch.setattr(batch, "run_batch", lambda subs, config, **kw: seen.append(config) or [])
    cli._batch(args)
    assert seen and (seen[0].kept_checkers, seen[0].keep_timed_checkers) == (kept, timed)


def test_results_graded_either_way_stay_reusable():
    plain = batch_config.BatchConfig(out=Path("o"))
    other = batch_config.BatchConfig(out=Path("o"), kept_checkers=False, keep_timed_checkers=True)
    assert other.fingerprint() == plain.fingerprint()
