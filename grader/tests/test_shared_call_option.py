"""batch --shared-call-timeout: from the command line to the batch's config and
the fingerprint that decides which stored results are reused."""

from pathlib import Path

from grader import cli
from grader.commands import arguments
from grader.batch import config as batch_config


def test_the_option_reaches_the_config(monkeypatch, tmp_path):
    args = arguments.build_parser("test").parse_args(
        ["batch", "sub", "--out", str(tmp_path), "--jobs-per-gpu", "4"]
        + ["--shared-call-timeout", "10"]
    )
    seen = []
    from grader.batch import orchestrator as batch

    monkeypatch.setattr(batch, "run_batch", lambda subs, config, **kw: seen.append(config) or [])
    cli._batch(args)
    assert seen and seen[0].shared_call_timeout == 10.0


def test_results_graded_without_it_stay_reusable_and_with_it_do_not_mix():
    plain = batch_config.BatchConfig(out=Path("o"))
    assert batch_config.BatchConfig(out=Path("o"), shared_call_timeout=None).fingerprint() == (
        plain.fingerprint()
    )
    bounded = batch_config.BatchConfig(out=Path("o"), shared_call_timeout=10.0)
    assert bounded.fingerprint() != plain.fingerprint()
