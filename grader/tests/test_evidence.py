"""The evidence schema (grader/infra/evidence): records round-trip through JSON, the
version is checked, every committed layout reads through the one adapter, and a
file the grader cannot understand is refused with where and why."""

import copy
import json
import subprocess
from pathlib import Path

import pytest

from grader.infra import evidence as E

RUNS = Path(__file__).resolve().parents[2] / "tests" / "gpu_runs"
H200 = RUNS / "h200" / "gpucheck.json"


def _json(path: Path) -> dict:
    return json.loads(E.read_text(path))


def _machine() -> E.Machine:
    return E.Machine(
        ["NVIDIA H200, 580.1, 143771 MiB, 1980 MHz, 3201 MHz"],
        "Build cuda_13.0.r13.0/compiler.1_0",
        "abc1234",
        "2026-11-25",
        "16",
    )


def _bench(**kw) -> E.BenchRun:
    sizes = [
        E.BenchSize(26, 1 << 26, "ok", gbps=3900.5, cub_gbps=4000.0, floor_us=5.0),
        E.BenchSize(28, 1 << 28, "wrong", detail="expected 1, got 2"),
    ]
    return E.BenchRun(sizes, name="02_x", contract="sum", ceiling_gbps=4260.0, exit_code=0, **kw)


def test_a_record_round_trips_through_json(tmp_path):
    ev = E.GpuCheck(
        machine=_machine(),
        parts=["bench"],
        labs={
            "02_x": E.LabEvidence(
                bench={"bench-02_x": _bench()},
                anchors=E.AnchorCheck({26: E.AnchorRow(3900.5, 4000.0, 0.975)}, True),
            )
        },
        class_run=E.ScriptRun(exit_code=0, seconds=1.5, output="ok"),
    )
    path = tmp_path / "gpucheck.json"
    E.dump(ev, path)
    data = _json(path)
    assert data["schema_version"] == E.SCHEMA_VERSION and data["kind"] == "gpucheck"
    assert data["labs"]["02_x"]["anchors"]["meets_required_share"] is True
    assert "class" in data and "class_run" not in data
    assert "sanitizer" not in data["labs"]["02_x"]  # a part not run is not recorded
    assert E.load(path, E.GpuCheck) == ev


def test_every_kind_round_trips():
    records = [
        E.BenchFile({"bench-02_x": _bench(lab="02_x")}, machine=_machine()),
        E.CalibrationFile(
            _machine(), 0.85, 3, [E.Calibration("02_x", [0.2, 0.21], 0.17, 0.085, 0.16)]
        ),
        E.ProfileFile(
            E.ProfileMachine("NVIDIA H200", "abc1234"),
            25,
            {"02_x": {"metrics": {"time_us": 150.0}}},
        ),
    ]
    for r in records:
        assert E.from_data(json.loads(E.dumps(r)), type(r)) == r


def test_a_timed_out_program_is_a_flag_not_a_string_exit_code():
    old = {
        "machine": _json_machine(),
        "studies": {
            "sort-first-study": {
                "exit_code": "timed_out",
                "output": "cut",
                "name": "sort-first-study",
                "sort_ms": 3.9,
            }
        },
    }
    st = E.from_data(old, E.GpuCheck).studies["sort-first-study"]
    assert st.exit_code is None and st.timed_out and st.report["sort_ms"] == 3.9


def _json_machine() -> dict:
    return E.to_data(_machine())


def test_an_unknown_version_is_refused_with_what_this_grader_reads():
    data = json.loads(E.dumps(E.BenchFile({"b": _bench()})))
    for bad in (E.SCHEMA_VERSION + 1, -1):
        data["schema_version"] = bad
        with pytest.raises(
            E.EvidenceError,
            match=rf"schema_version {bad} is unknown: this "
            rf"grader reads 1 to {E.SCHEMA_VERSION}",
        ):
            E.from_data(data, E.BenchFile, "x.json")
    data["schema_version"] = "1"
    with pytest.raises(E.EvidenceError, match="not a whole number"):
        E.from_data(data, E.BenchFile)


def test_the_wrong_kind_an_unknown_key_and_a_wrong_type_say_where():
    data = json.loads(E.dumps(E.BenchFile({"b": _bench()})))
    with pytest.raises(E.EvidenceError, match="this is bench evidence, not gpucheck"):
        E.from_data(data, E.GpuCheck)
    typo = copy.deepcopy(data)
    typo["benches"]["b"]["sizes"][0]["gpbs"] = 1.0
    with pytest.raises(E.EvidenceError, match=r"benches\.b\.sizes\[0\]: unknown key gpbs"):
        E.from_data(typo, E.BenchFile)
    wrong = copy.deepcopy(data)
    wrong["benches"]["b"]["sizes"][0]["log2n"] = "26"
    with pytest.raises(E.EvidenceError, match=r"sizes\[0\]\.log2n: must be a int, not str"):
        E.from_data(wrong, E.BenchFile)
    with pytest.raises(E.EvidenceError, match="one JSON object"):
        E.from_data([1, 2], E.BenchFile)
    with pytest.raises(E.EvidenceError, match="no schema_version and not a layout"):
        E.from_data({"something": 1}, E.GpuCheck)


def test_a_file_that_is_not_json_is_refused(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(E.EvidenceError, match="not JSON"):
        E.load(tmp_path / "x.json", E.GpuCheck)


# --- the committed layouts, through the adapter --------------------------------------


def _committed(kind: str) -> list[Path]:
    out = []
    for p in sorted([*RUNS.glob("h*/*.json"), *RUNS.glob("h*/*.json.gz")]):
        data = _json(p)
        if not isinstance(data, dict):
            continue
        if kind == "profile" and "profiles" in data:
            out.append(p)
        elif kind == "gpucheck" and "machine" in data and "profiles" not in data:
            out.append(p)
    return out


@pytest.mark.parametrize("path", _committed("gpucheck"), ids=lambda p: p.parent.name + "/" + p.name)
def test_every_committed_gpucheck_run_reads_and_keeps_its_figures(path):
    old = _json(path)
    ev = E.load(path, E.GpuCheck)
    assert ev.machine.commit == old["machine"]["commit"]
    for lab_id, entry in old.get("labs", {}).items():
        new = ev.labs[lab_id]
        if "anchors" in entry:
            # Schema version 1 names the flag; the legacy layouts named the rule.
            flag = entry["anchors"].get(
                "meets_required_share", entry["anchors"].get("meets_90_percent_at_2^26_and_2^28")
            )
            assert new.anchors.meets_required_share == flag
        for name, b in entry.get("bench", {}).items():
            assert [s.gbps for s in new.bench[name].sizes] == [s["gbps"] for s in b["sizes"]]
        if "solutions" in entry:
            assert new.solutions.score.fraction == entry["solutions"]["score"]["fraction"]
    # Read again from what it writes: nothing lost on the way.
    assert E.from_data(E.to_data(ev), E.GpuCheck) == ev


@pytest.mark.parametrize("path", _committed("profile"), ids=lambda p: p.name)
def test_every_committed_profile_reads(path):
    prof = E.load(path, E.ProfileFile)
    assert prof.profiles == _json(path)["profiles"] and prof.log2n == 25


def test_a_committed_bench_json_of_grader_bench_reads():
    # grader bench wrote a bare object of bench name -> run, each with its lab.
    old = {
        name: dict(b, lab=lab_id)
        for lab_id, e in _json(H200)["labs"].items()
        for name, b in e.get("bench", {}).items()
    }
    benches = E.from_data(old, E.BenchFile).benches
    assert benches.keys() == old.keys()
    assert benches["bench-09_shuffle_vector_loads-sum"].lab == "09_shuffle_vector_loads"


def test_the_oldest_layout_takes_cub_from_the_peer_bench():
    old = {
        "machine": _json_machine(),
        "labs": {
            "02_interleaved": {
                "bench": {
                    "name": "02_interleaved",
                    "sizes": [{"log2n": 20, "status": "ok", "gbps": 300.0}],
                }
            }
        },
        "peers": {
            "cub_sum": {
                "bench": {"sizes": [{"log2n": 20, "n": 1 << 20, "status": "ok", "gbps": 380.0}]},
                "anchors": {"sizes": {}, "meets_90_percent_at_2^26_and_2^28": False},
            }
        },
    }
    ev = E.from_data(old, E.GpuCheck)
    b = ev.labs["02_interleaved"].bench["bench-02_interleaved"]
    assert not b.cub_same_process and b.contract == "sum"
    assert (b.sizes[0].n, b.sizes[0].cub_gbps) == (1 << 20, 380.0)
    assert ev.peers["cub_sum"].anchors.meets_required_share is False
    assert old["labs"]["02_interleaved"]["bench"]["name"] == "02_interleaved"  # input untouched


def test_an_old_checker_run_keeps_a_restart_it_counted():
    old = _json(RUNS / "h100" / "gpucheck.json.gz")
    old["labs"]["02_interleaved"]["solutions"]["run"]["restarts"] = 2
    ev = E.from_data(old, E.GpuCheck)
    assert ev.labs["02_interleaved"].solutions.run.properties["restarts"] == "2"


def test_joined_sandbox_batches_become_batches():
    ev = E.load(RUNS / "h200" / "trusted-sandbox-all-labs.json", E.GpuCheck)
    assert len(ev.sandbox.batches) == 2 and ev.sandbox.full_marks


def test_an_enum_field_reads_by_value_and_refuses_others():
    # The grader's statuses may become StrEnums; the codec reads and writes them by value.
    import enum
    from dataclasses import dataclass

    from grader.infra.evidence.codec import decode, encode

    class Colour(enum.Enum):
        RED = "red"

    @dataclass
    class Paint:
        colour: Colour

    assert decode(Paint, {"colour": "red"}, "p") == Paint(Colour.RED)
    assert encode(Paint(Colour.RED)) == {"colour": "red"}
    with pytest.raises(E.EvidenceError, match=r"p\.colour: 'blue' is not one of 'red'"):
        decode(Paint, {"colour": "blue"}, "p")


def _tracked_weight(root: Path, under: str) -> int:
    """Bytes of the files git tracks under `under` (a folder of `root`)."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--", under], capture_output=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: no tracked files to weigh")
    names = [n for n in listed.stdout.decode().split("\0") if n]
    return sum((root / n).stat().st_size for n in names if (root / n).is_file())


EVIDENCE_LIMIT = 8 * 2**20


def test_the_evidence_in_the_tree_stays_under_its_limit():
    # The tree keeps the current run of each claim (the evidence's README), and
    # every tracked file travels to the GPU machine on each call: a superseded run
    # leaves the tree (git keeps it), and a kept run that no code reads is gzipped.
    total = _tracked_weight(RUNS.parents[1], "tests/gpu_runs")
    assert 0 < total <= EVIDENCE_LIMIT, (
        f"tests/gpu_runs weighs {total / 2**20:.1f} MiB, over {EVIDENCE_LIMIT / 2**20:.0f} MiB: "
        "git rm the runs a newer run of the same claim supersedes, gzip -9 -n the rest "
        "that no code reads, and say which file is current in its README"
    )


def test_the_weight_counts_every_tracked_run(tmp_path):
    # The check must be able to fail: a tracked file over the limit is weighed.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    runs = tmp_path / "tests" / "gpu_runs"
    runs.mkdir(parents=True)
    (runs / "big.json").write_bytes(b"x" * (EVIDENCE_LIMIT + 1))
    (tmp_path / "elsewhere.txt").write_bytes(b"y" * 100)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    assert _tracked_weight(tmp_path, "tests/gpu_runs") == EVIDENCE_LIMIT + 1 > EVIDENCE_LIMIT
