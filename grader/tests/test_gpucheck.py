"""gpucheck's bookkeeping, which needs no GPU: partial runs joined into one
piece of evidence, and the options that split a part over GPU calls."""

import json
from pathlib import Path

from grader.infra import evidence
from grader.gpucheck import bench as gpucheck_bench
from grader.gpucheck.summary import summary_table
from grader.infra.evidence import BenchRun, BenchSize, GpuCheck, ScriptRun
from grader.infra.evidence.merge import join_sandbox, merge
from conftest import fake_bench

RUNS = Path(__file__).resolve().parents[2] / "tests" / "gpu_runs" / "h200"
MACHINE = evidence.Machine(
    ["NVIDIA H200, 580.1, 143771 MiB, 1980 MHz, 3201 MHz"], "nvcc", "abc1234", "2026-11-25", "16"
)


def _sandbox(labs, code=0, full=True, seconds=100.0):
    return ScriptRun(
        exit_code=code,
        seconds=seconds,
        full_marks=full,
        labs_graded=list(labs),
        output=f"graded {','.join(labs)}",
    )


def test_merge_keeps_both_sandbox_runs(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    evidence.dump(
        GpuCheck(
            MACHINE,
            parts=["sandbox"],
            seconds=300.0,
            sandbox=_sandbox(["01_cpu_baseline", "02_interleaved"]),
        ),
        first,
    )
    evidence.dump(
        GpuCheck(
            MACHINE,
            parts=["sandbox"],
            seconds=280.0,
            sandbox=_sandbox(["03_strided_index"], code=1, full=False),
        ),
        second,
    )
    merged = merge([first, second])
    box = merged.sandbox
    assert [r.labs_graded for r in box.batches] == [
        ["01_cpu_baseline", "02_interleaved"],
        ["03_strided_index"],
    ]
    assert box.labs_graded == ["01_cpu_baseline", "02_interleaved", "03_strided_index"]
    # One run short of full marks makes the whole part fail.
    assert box.exit_code == 1 and box.full_marks is False
    assert merged.seconds == 580.0


def test_three_runs_join_in_order():
    runs = [_sandbox([lab]) for lab in ("01_cpu_baseline", "02_interleaved", "03_strided_index")]
    joined = join_sandbox(join_sandbox(runs[0], runs[1]), runs[2])
    assert len(joined.batches) == 3 and joined.full_marks and joined.exit_code == 0


def test_a_batch_that_did_not_end_fails_the_join():
    joined = join_sandbox(_sandbox(["01_cpu_baseline"]), _sandbox(["02_interleaved"], code=None))
    assert joined.exit_code == 1


def test_merging_the_two_committed_calls_gives_the_committed_run():
    # The committed gpucheck run is its bench run and its labs run joined.
    merged = merge([RUNS / "bench-fac4fd8.json", RUNS / "labs-fac4fd8.json.gz"])
    assert merged == evidence.load(RUNS / "gpucheck-fac4fd8.json.gz", GpuCheck)


def test_the_summary_of_the_committed_run():
    table = summary_table(evidence.load(RUNS / "gpucheck.json", GpuCheck))
    assert "commit 80e6c69" in table
    row = next(line for line in table.splitlines() if line.startswith("09_shuffle_vector_loads"))
    assert "278/278" in row and "fails:not_implemented" in row and "4476" in row
    assert "meson suites skeletons/mutants/peers/harness: 58 passed, 0 failed" in table
    assert "floor: at or below every timed call of every bench at every size" in table


def test_a_bench_report_becomes_a_typed_run(tmp_path):
    report = {
        "name": "02_interleaved",
        "contract": "sum",
        "device": "X",
        "ceiling_gbps": 4000.0,
        "theoretical_gbps": 4800.0,
        "sizes": [
            {
                "log2n": 26,
                "n": 1 << 26,
                "status": "ok",
                "gbps": 900.0,
                "median_ms": 0.3,
                "cub_gbps": 3600.0,
                "cub_median_ms": 0.07,
                "launch_us": 4.0,
                "floor_us": 5.0,
                "detail": "",
            }
        ],
    }
    run = gpucheck_bench.bench(
        fake_bench(tmp_path, "bench-02_interleaved", json.dumps(report)), tmp_path
    )
    assert run.exit_code == 0 and not run.timed_out and "measured" in run.output
    assert run.sizes[0].gbps == 900.0 and run.at(26).cub_gbps == 3600.0
    assert gpucheck_bench.cub_check(run).sizes[26].ratio == 0.25


def test_a_report_off_the_schema_is_kept_with_why(tmp_path):
    run = gpucheck_bench.bench(
        fake_bench(tmp_path, "bench-02_interleaved", '{"sizes": [], "new_key": 1}'), tmp_path
    )
    assert run.sizes == [] and "report not read" in run.output and "new_key" in run.output


def test_anchor_check_requires_only_the_anchored_sizes():
    run = BenchRun(
        [BenchSize(26, 1 << 26, "ok", gbps=800.0), BenchSize(28, 1 << 28, "ok", gbps=950.0)]
    )
    check = gpucheck_bench.anchor_check(run, {26: 1000.0, 28: 1000.0})
    assert not check.meets_required_share and check.sizes[26].share == 0.8
    assert gpucheck_bench.anchor_check(run, {28: 1000.0}).meets_required_share
    assert gpucheck_bench.anchor_check(run, {}).required_sizes == []


def test_unknown_sandbox_lab_is_refused(tmp_path, capsys):
    from grader import cli

    code = cli.main(
        ["gpucheck", "--out", str(tmp_path), "--parts", "sandbox", "--sandbox-labs", "01,99"]
    )
    assert code != 0
    assert "unknown lab '99'" in capsys.readouterr().err
    assert not (tmp_path / "gpucheck.json").exists()


def test_attack_labs_choose_what_the_attacks_part_runs(tmp_path, capsys, monkeypatch):
    from grader import cli
    from grader.gpucheck import scripts as gpucheck_scripts

    code = cli.main(
        ["gpucheck", "--out", str(tmp_path), "--parts", "attacks", "--attack-labs", "09,98"]
    )
    assert code != 0 and "unknown lab '98'" in capsys.readouterr().err
    seen: list[list[str]] = []

    def script(args, out_dir, name):
        seen.append(args)
        return evidence.ScriptRun(exit_code=0, seconds=0.0, output="")

    monkeypatch.setattr(gpucheck_scripts, "_script", script)
    gpucheck_scripts.attacks_part(tmp_path, "sm_90", ("09_shuffle_vector_loads",))
    gpucheck_scripts.attacks_part(tmp_path, "sm_90")
    labs = [[a for i, a in enumerate(s) if i and s[i - 1] == "--lab"] for s in seen]
    assert labs == [["09_shuffle_vector_loads"], list(gpucheck_scripts.ATTACK_LABS)]


def test_bench_plots_the_committed_benches(tmp_path):
    import pytest

    pytest.importorskip("matplotlib", reason="matplotlib is not installed: no plots")
    from grader.commands import bench

    run = evidence.load(RUNS / "bench-fac4fd8.json", GpuCheck)
    results = {name: b for e in (run.labs or {}).values() for name, b in e.bench.items()}
    written = bench.plot(results, tmp_path)
    assert sorted(p.name for p in written) == [
        "bandwidth_vs_size.png",
        "bandwidth_vs_size.svg",
        "fraction_of_ceiling.png",
        "fraction_of_ceiling.svg",
    ]
    assert all(p.stat().st_size > 1000 for p in written)
