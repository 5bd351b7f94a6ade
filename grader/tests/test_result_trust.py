"""A result is trusted only if the batch wrote it: each result.json is signed
(HMAC-SHA256 under a key outside --out, infra/store.py), and a resumed batch
grades again every result that does not verify, and says so. What a student
and the gradebook read of a kept result is always that result."""

import json
import stat

from conftest import student_folder
from test_batch import LAB01

from grader.batch import orchestrator as batch, config as batch_config
from grader.infra import store


def config(tmp_path):
    return batch_config.BatchConfig(out=tmp_path / "out", lab_ids=["01"], gpus=[])


def graded_twice(tmp_path, offline_batch, edit):
    """amy (0 points) and ben (full points) graded, `edit` applied to the
    out folder, then the batch resumed: its messages and results."""
    specs = [
        str(student_folder(tmp_path, "amy")),
        str(student_folder(tmp_path, "ben", "  return 42;\n")),
    ]
    batch.run_batch(specs, config(tmp_path), progress=lambda *_: None)
    edit(tmp_path / "out" / "students")
    offline_batch.clear()
    messages: list[str] = []
    results = batch.run_batch(specs, config(tmp_path), progress=messages.append)
    return messages, {r.student: r for r in results}


def raise_to_full_points(students):
    path = students / "amy" / "result.json"
    d = json.loads(path.read_text())
    assert d["labs"][0]["points_correctness"] == 0
    d["labs"][0]["points_correctness"] = LAB01.points_correctness
    d["labs"][0]["points"] = d["points"] = LAB01.points_correctness
    path.write_text(json.dumps(d, indent=2) + "\n")


def test_a_result_edited_by_hand_is_graded_again_and_said_so(tmp_path, offline_batch):
    messages, results = graded_twice(tmp_path, offline_batch, raise_to_full_points)
    assert offline_batch == ["01_cpu_baseline"]  # amy only: ben's result verified
    assert results["amy"].points == 0 and results["ben"].points == LAB01.points_correctness
    said = [m for m in messages if "did not write" in m]
    assert said == ["[batch] regrading 1 result(s) that this grader did not write: amy"], messages
    row = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()[1]
    assert row.startswith("amy,0,")


def test_a_result_without_its_signature_is_graded_again(tmp_path, offline_batch):
    messages, results = graded_twice(
        tmp_path, offline_batch, lambda s: (s / "ben" / store.SIGNATURE).unlink()
    )
    assert (
        offline_batch == ["01_cpu_baseline"] and results["ben"].points == LAB01.points_correctness
    )
    assert any("did not write: ben" in m for m in messages)


def test_results_signed_under_another_key_are_graded_again(tmp_path, offline_batch, monkeypatch):
    def new_key(students):
        monkeypatch.setenv(store.KEY_ENV, str(tmp_path / "another-key"))

    messages, _ = graded_twice(tmp_path, offline_batch, new_key)
    assert sorted(offline_batch) == ["01_cpu_baseline"] * 2
    assert any("regrading 2 result(s)" in m for m in messages)


def test_a_kept_result_is_what_its_student_and_the_gradebook_read(tmp_path, offline_batch):
    def edit_views(students):
        (students / "ben" / "feedback.md").write_text("Total: **100 / 10**\n")
        (students / "ben" / "results.json").write_text('{"score": 100}')

    messages, results = graded_twice(tmp_path, offline_batch, edit_views)
    assert offline_batch == [] and not [m for m in messages if "did not write" in m]
    ben = tmp_path / "out" / "students" / "ben"
    assert json.loads((ben / "results.json").read_text())["score"] == results["ben"].points
    assert f"**{results['ben'].points:g} / " in (ben / "feedback.md").read_text()


def test_the_key_is_made_once_outside_out_readable_by_its_owner_only(tmp_path, monkeypatch):
    monkeypatch.delenv(store.KEY_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = store.result_key_path()
    assert path == tmp_path / "state" / "cuda-reduction-labs" / "result-key"
    key = store.result_key()
    assert len(key) == 64 and stat.S_IMODE(path.stat().st_mode) == 0o600
    store._key.cache_clear()
    assert store.result_key() == key  # read back, not made again


def test_the_gradebook_is_the_class_after_a_run_that_names_only_some(tmp_path, offline_batch):
    specs = [str(student_folder(tmp_path, n)) for n in ("amy", "ben", "cid")]
    batch.run_batch(specs[:2], config(tmp_path), progress=lambda *_: None)
    raise_to_full_points(tmp_path / "out" / "students")  # amy's result: not this grader's
    (tmp_path / "out" / "students" / "dan").mkdir()  # a folder without a result
    messages: list[str] = []
    results = batch.run_batch(specs[2:], config(tmp_path), progress=messages.append)
    assert [r.student for r in results] == ["cid"]  # what this run graded
    rows = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == ["ben", "cid"]
    assert "[batch] the gradebook also lists 1 graded earlier: ben" in messages
    said = [m for m in messages if "leaves out" in m]
    assert len(said) == 2 and "amy" in said[0] and "did not write" in said[0]
    assert "dan" in said[1] and "no readable result.json" in said[1]
    report = json.loads((tmp_path / "out" / "batch.json").read_text())
    assert set(report["left_out"]) == {"amy", "dan"}
    assert "students/ben/feedback.md" in (tmp_path / "out" / "report.html").read_text()
