"""batch --sanitizer-places: from the command line to the batch's config and
the machine's compute-sanitizer places (grader/engine/sharing/sanitizer_places.py); a place count
moves no grade, so results graded with another stay reusable."""

from pathlib import Path

from grader import cli
from grader.commands import arguments
from grader.batch import config as batch_config
from grader.engine.sharing import sanitizer_places as places


def test_the_option_reaches_the_config(monkeypatch, tmp_path):
    args = arguments.build_parser("test").parse_args(
        ["batch", "sub", "--out", str(tmp_path), "--jobs-per-gpu", "4", "--sanitizer-places", "8"]
    )
    seen = []
    from grader.batch import orchestrator as batch

    monkeypatch.setattr(batch, "run_batch", lambda subs, config, **kw: seen.append(config) or [])
    cli._batch(args)
    assert seen and seen[0].sanitizer_places == 8


def test_it_sets_how_many_runs_in_namespaces_of_their_own_go_at_once(monkeypatch):
    monkeypatch.setattr(places, "SANITIZER_SLOTS", places.SANITIZER_SLOTS)
    monkeypatch.setattr(places, "_SANITIZER_SHARED", places._SANITIZER_SHARED)
    places.set_places(6)

    class Own:
        private_network = True

    place = places.place(Own())
    assert places.SANITIZER_SLOTS == 6
    assert [place.acquire(blocking=False) for _ in range(7)] == [True] * 6 + [False]
    assert places.place(object()) is places._SANITIZER_ALONE  # the machine's namespace


def test_results_graded_with_another_count_stay_reusable():
    plain = batch_config.BatchConfig(out=Path("o"))
    more = batch_config.BatchConfig(out=Path("o"), sanitizer_places=8)
    assert more.fingerprint() == plain.fingerprint()
