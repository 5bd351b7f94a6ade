"""The floor of a bench call is a lower bound, and the bench says where it is not.

The floor (common/bench_device.hpp, bench_with_floor) is the larger of an empty
kernel's launch and the input's bytes at the theoretical bandwidth. Every bench
run records, per size, the timed calls that beat it (`floor_below_all`), and
prints where; runs of schema version 1, whose floor summed the two, read with
the floor re-derived under the corrected rule. No GPU is needed: the bench
programs here are fakes that write a report."""

import json
from pathlib import Path

from grader.gpucheck import bench as gpucheck_bench
from grader.gpucheck.summary import summary_table
from grader.infra import evidence as E
from conftest import fake_bench

RUNS = Path(__file__).resolve().parents[2] / "tests" / "gpu_runs" / "h200"
MACHINE = E.Machine(
    ["NVIDIA H200, 580.1, 143771 MiB, 1980 MHz, 3201 MHz"], "nvcc", "abc1234", "2026-11-25", "16"
)


def _size(log2n: int, lab_us: float, cub_us: float, launch_us: float, bytes_us: float) -> dict:
    return {
        "log2n": log2n,
        "n": 1 << log2n,
        "status": "ok",
        "gbps": 4 * (1 << log2n) / (lab_us * 1e3),
        "median_ms": lab_us / 1e3,
        "cub_gbps": 4 * (1 << log2n) / (cub_us * 1e3),
        "cub_median_ms": cub_us / 1e3,
        "launch_us": launch_us,
        "bytes_us": bytes_us,
        "floor_us": max(launch_us, bytes_us),
        "detail": "",
    }


def _report(lab_us_at_20: float) -> dict:
    """A bench report over 2^16 and 2^20: the lab's time at 2^20 as given, the
    floor there 4.0 us (the launch; the bytes take 0.87 us)."""
    return {
        "name": "09_shuffle_vector_loads-sum",
        "contract": "sum",
        "device": "NVIDIA H200",
        "ceiling_gbps": 4250.0,
        "theoretical_gbps": 4814.3,
        "sizes": [
            _size(16, 3.61, 7.9, 3.5, 0.054),
            _size(20, lab_us_at_20, 7.8, 4.0, 0.871),
        ],
    }


BENCH = "bench-09_shuffle_vector_loads-sum"


def test_a_call_below_the_floor_is_flagged_in_the_json_and_the_tables(tmp_path):
    run = gpucheck_bench.bench(fake_bench(tmp_path, BENCH, json.dumps(_report(3.9))), tmp_path)
    print("lab at 2^20: 3.9 us against a floor of 4.0 us")
    assert run.floor_below_all == {16: [], 20: ["lab"]} and run.floor_holds is False
    data = json.loads(E.dumps(E.BenchFile({"bench-09": run}, machine=MACHINE)))
    assert data["benches"]["bench-09"]["floor_below_all"] == {"16": [], "20": ["lab"]}
    table = gpucheck_bench.floor_table({"bench-09": run})
    assert "FLOOR BEATEN at 2^20 (lab)" in table and "0.97" in table
    ev = E.GpuCheck(MACHINE, labs={"09_x": E.LabEvidence(bench={"bench-09": run})})
    assert "bench-09: FLOOR BEATEN at 2^20 (lab)" in summary_table(ev)


def test_cub_below_the_floor_is_named_too():
    report = _report(4.2)
    report["sizes"][0]["cub_median_ms"] = 3.4e-3
    run = E.as_record(report, E.BenchRun)
    assert run.floor_check() == {16: ["cub"], 20: []}


def test_a_floor_below_every_call_is_said_to_hold(tmp_path):
    run = gpucheck_bench.bench(fake_bench(tmp_path, BENCH, json.dumps(_report(4.2))), tmp_path)
    assert run.floor_below_all == {16: [], 20: []} and run.floor_holds is True
    table = gpucheck_bench.floor_table({"bench-09": run})
    assert "floor: at or below every timed call of every bench at every size" in table
    assert "BEATEN" not in table and "1.05" in table  # 4.2 us over 4.0


def test_a_size_without_a_figure_is_not_checked(tmp_path):
    report = _report(4.2)
    report["sizes"][1].update(status="wrong", median_ms=0.0, gbps=0.0, detail="expected 1, got 2")
    run = gpucheck_bench.bench(fake_bench(tmp_path, BENCH, json.dumps(report)), tmp_path)
    assert run.floor_below_all == {16: []}
    assert (
        gpucheck_bench.bench(
            fake_bench(tmp_path, BENCH, json.dumps({"sizes": []})), tmp_path
        ).floor_below_all
        is None
    )


def test_a_version_1_run_reads_with_the_floor_as_the_larger_of_its_parts():
    # Written with schema version 1, whose floor_us was the launch plus the bytes.
    path = RUNS / "bench-6ef3cb7.json"
    old = json.loads(E.read_text(path))
    assert old["schema_version"] == 1
    ev = E.load(path, E.GpuCheck)
    for lab_id, entry in old["labs"].items():
        for name, b in entry.get("bench", {}).items():
            for raw, s in zip(b["sizes"], ev.labs[lab_id].bench[name].sizes):
                assert s.launch_us == raw["launch_us"] and s.gbps == raw["gbps"]
                assert abs(s.bytes_us - (raw["floor_us"] - raw["launch_us"])) < 1e-6
                assert s.floor_us == max(s.launch_us, s.bytes_us) <= raw["floor_us"]
            run = ev.labs[lab_id].bench[name]
            assert run.floor_below_all is None  # the run did not check
            assert run.floor_holds, f"{name}: a call below the re-derived floor"
    assert E.from_data(E.to_data(ev), E.GpuCheck) == ev
    benches = {n: b for e in ev.labs.values() for n, b in e.bench.items()}
    assert "older than the check" in gpucheck_bench.floor_lines(benches)[0]


def test_the_summed_floor_of_the_old_runs_was_beaten_and_the_larger_is_not():
    # At 2^20 lab 09's sum took 5.09 us against 4.96 us of launch and 0.87 us of
    # bytes: a batch overlaps a call's reading with the next call's launch.
    raw = json.loads(E.read_text(RUNS / "bench-fac4fd8.json"))
    sizes = raw["labs"]["09_shuffle_vector_loads"]["bench"]["bench-09_shuffle_vector_loads-sum"]
    s20 = next(s for s in sizes["sizes"] if s["log2n"] == 20)
    assert s20["median_ms"] * 1e3 < s20["floor_us"]  # the summed floor, beaten
    run = E.load(RUNS / "bench-fac4fd8.json", E.GpuCheck).labs["09_shuffle_vector_loads"]
    s = run.bench["bench-09_shuffle_vector_loads-sum"].at(20)
    assert s.floor_us == s.launch_us and s.below_floor() == []
    assert 1.0 <= s.median_ms * 1e3 / s.floor_us < 1.05


def test_a_version_2_bench_file_round_trips_its_check():
    run = E.as_record(_report(3.9), E.BenchRun)
    run.floor_below_all = run.floor_check()
    record = E.BenchFile({"bench-09": run}, machine=MACHINE)
    back = E.from_data(json.loads(E.dumps(record)), E.BenchFile)
    assert back == record and back.benches["bench-09"].floor_below_all == {16: [], 20: ["lab"]}
