"""`profile` without a GPU: ncu's CSV read into one call's figures, the errors
that are not the student's (no GPU, no permission), and the table. A fake
`ncu` on PATH writes what the real one writes (its layout was taken from
ncu 2025.3 on an H100: header row, units row, one row per kernel)."""

import json
import os
import stat

import pytest

from grader import cli, labmeta
from grader.commands import profile
from grader.engine import profile_ncu
from grader.infra import evidence

HEADER = ['"ID"', '"Kernel Name"', '"Block Size"', '"Grid Size"']


def ncu_csv(kernels: list[dict]) -> str:
    metrics = list(profile_ncu.COUNTERS + profile_ncu.TIME_WEIGHTED)
    rows = [
        "==PROF== Connected to process 1 (/x)",
        ",".join(HEADER + [f'"{m}"' for m in metrics]),
        ",".join(['""'] * len(HEADER) + ['"unit"'] * len(metrics)),
    ]
    for i, k in enumerate(kernels):
        values = [f'"{k.get(m, 0):,}"' for m in metrics]  # ncu writes 1,844,448
        rows.append(
            ",".join(
                [f'"{i}"', f'"{k["name"]}(int const*)"', '"(256, 1, 1)"', '"(4096, 1, 1)"'] + values
            )
        )
    rows.append("==PROF== Disconnected from process 1")
    return "\n".join(rows) + "\n"


def two_kernels() -> list[dict]:
    return [
        {
            "name": "block_sums",
            profile_ncu.TIME: 300000,
            "dram__bytes_read.sum": 134217728,
            "smsp__inst_executed.sum": 2000000,
            "smsp__thread_inst_executed_pred_on.sum": 48000000,
            "smsp__sass_branch_targets.sum": 1000,
            "smsp__sass_branch_targets_threads_uniform.sum": 250,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 7000,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 1000,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 80.0,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 90.0,
        },
        {
            "name": "finish",
            profile_ncu.TIME: 100000,
            "dram__bytes_read.sum": 0,
            "smsp__inst_executed.sum": 1000,
            "smsp__thread_inst_executed_pred_on.sum": 32000,
            "smsp__sass_branch_targets.sum": 1000,
            "smsp__sass_branch_targets_threads_uniform.sum": 750,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed": 0.0,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 10.0,
        },
    ]


def test_metric_catalogue_matches_the_course_file_schema():
    assert tuple(profile_ncu.METRICS) == labmeta.PROFILE_METRICS
    for lab in labmeta.load().labs:
        assert all(k in profile_ncu.METRICS for k in lab.profile)
        # Lab 12 spans GPUs and is not profiled (grader profile leaves it out).
        assert lab.profile or not lab.needs_gpu or lab.spans_gpus, (
            f"{lab.id} names nothing to profile"
        )


def test_csv_is_summed_over_kernels_and_rates_weighted_by_time():
    kernels = profile_ncu.parse_csv(ncu_csv(two_kernels()))
    assert [k.name for k in kernels] == ["block_sums(int const*)", "finish(int const*)"]
    total = profile_ncu.combine(kernels)
    assert total[profile_ncu.TIME] == 400000
    # 80% for 3/4 of the time, 0% for 1/4.
    assert total["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(60.0)
    m = profile_ncu.metrics_of(total, 1 << 25, len(kernels))
    assert m["time_us"] == pytest.approx(400.0)
    assert m["kernels"] == 2
    assert m["dram_bytes_per_element"] == pytest.approx(4.0)
    assert m["branch_uniform_pct"] == pytest.approx(50.0)  # (250 + 750) / 2000
    assert m["bank_conflicts"] == 8000
    assert m["active_threads"] == pytest.approx(48032000 / 2001000)
    assert m["bytes_per_load"] is None  # no global load counted: no ratio, not a zero


def test_units_and_prof_lines_are_not_kernels():
    assert profile_ncu.parse_csv("==PROF== No kernels were profiled.\n") == []
    assert len(profile_ncu.parse_csv(ncu_csv(two_kernels()[:1]))) == 1


def fake_ncu(tmp_path, monkeypatch, *, csv_text="", status="ok", say="", code=0):
    """An `ncu` that writes CSV_TEXT to --log-file and the bench's JSON to --json=."""
    data = tmp_path / "fake"
    data.mkdir()
    (data / "csv").write_text(csv_text)
    (data / "json").write_text(
        json.dumps(
            {
                "name": "03_strided_index",
                "contract": "sum",
                "device": "NVIDIA H200",
                "log2n": 25,
                "status": status,
                "detail": "expected 7, got 9" if status == "wrong" else "",
            }
        )
    )
    script = tmp_path / "bin" / "ncu"
    script.parent.mkdir()
    script.write_text(f"""#!/usr/bin/env python3
import shutil, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
out = next(a[7:] for a in args if a.startswith("--json="))
shutil.copy("{data}/csv", log)
if {status!r} != "none":
    shutil.copy("{data}/json", out)
print({say!r})
sys.exit({code})
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "bench-03_strided_index"


def test_a_profiled_call(tmp_path, monkeypatch):
    binary = fake_ncu(tmp_path, monkeypatch, csv_text=ncu_csv(two_kernels()))
    p = profile_ncu.profile_binary(binary, "yours")
    assert p.status == "ok" and p.device == "NVIDIA H200" and len(p.kernels) == 2
    assert p.metrics["kernels"] == 2


def test_a_wrong_result_is_still_profiled_and_says_so(tmp_path, monkeypatch):
    binary = fake_ncu(tmp_path, monkeypatch, csv_text=ncu_csv(two_kernels()), status="wrong")
    p = profile_ncu.profile_binary(binary, "yours")
    assert p.status == "wrong" and p.metrics
    course = labmeta.load()
    text = profile.table(course, "03_strided_index", {"yours": p}, "02_interleaved")
    assert "WRONG RESULT (expected 7, got 9)" in text


def test_no_permission_is_its_own_exit_with_the_way_out(tmp_path, monkeypatch):
    binary = fake_ncu(
        tmp_path,
        monkeypatch,
        status="none",
        code=1,
        say="==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
        "access NVIDIA GPU Performance Counters on the target device 0.",
    )
    with pytest.raises(profile_ncu.ProfileError) as e:
        profile_ncu.profile_binary(binary, "yours")
    assert e.value.exit_code == profile_ncu.EXIT_NO_PERMISSION == 5
    assert "NVreg_RestrictProfilingToAdminUsers=0" in str(e.value)


def test_no_kernel_profiled_is_an_error_not_a_zero(tmp_path, monkeypatch):
    binary = fake_ncu(tmp_path, monkeypatch, csv_text="==PROF== No kernels were profiled.\n")
    p = profile_ncu.profile_binary(binary, "yours")
    assert p.status == "error" and not p.metrics and "no kernel" in p.detail


def test_without_a_gpu_profile_says_so(monkeypatch, capsys):
    from grader.infra import gpus

    monkeypatch.setattr(gpus, "visible_gpus", lambda: [])
    assert cli.main(["profile", "03"]) == profile_ncu.EXIT_NO_GPU
    assert "needs an NVIDIA GPU" in capsys.readouterr().out


def test_cpu_lab_and_unknown_lab_are_usage_errors(capsys):
    assert cli.main(["profile", "01"]) == 2
    assert cli.main(["profile", "99"]) == 2
    err = capsys.readouterr().err
    assert "runs on the CPU" in err and "unknown lab '99'" in err


def test_previous_lab_is_the_nearest_with_the_same_contract():
    course = labmeta.load()

    def prev(name):
        return profile.previous_bench(
            course,
            profile.lab_of(course, name),
            lambda b: profile.contract_of(course, b),
            lambda i: profile.bench_names(course.lab(i)),
            name,
        )

    assert prev("02_interleaved") is None  # lab 01 has no kernel
    assert prev("03_strided_index") == "02_interleaved"
    assert prev("08_max_reduction") == "07_atomic_finish"  # no earlier max: the lab before
    assert prev("09_shuffle_vector_loads-sum") == "07_atomic_finish"
    assert prev("09_shuffle_vector_loads-max") == "08_max_reduction"
    assert prev("10_nested_dynamic") == "09_shuffle_vector_loads-sum"


def test_committed_reference_is_labelled_with_its_gpu(tmp_path):
    p = profile_ncu.Profile(
        "04_sequential_addressing",
        "reference",
        "ok",
        device="NVIDIA H200",
        metrics={k: 1.0 for k in profile_ncu.METRICS},
    )
    # Written and read back through the evidence schema, as `profile --references` and
    # a student's `profile` do.
    path = tmp_path / "profile.json"
    evidence.dump(
        evidence.ProfileFile(
            machine=evidence.ProfileMachine(gpu="NVIDIA H200", commit="abcdef123"),
            log2n=25,
            profiles={"04_sequential_addressing": profile.asdict(p)},
        ),
        path,
    )
    assert json.loads(path.read_text())["schema_version"] == evidence.SCHEMA_VERSION
    committed = profile.load_reference_run(path)
    got = profile._reference("04_sequential_addressing", tmp_path, False, committed, 25, 1, print)
    assert got.source == "the committed run on NVIDIA H200 (commit abcdef1), not this GPU"
    text = profile.table(labmeta.load(), "04_sequential_addressing", {"reference": got}, None)
    assert "reference: the committed run on NVIDIA H200 (commit abcdef1), not this GPU" in text
    assert (
        profile._reference("05_two_loads_per_thread", tmp_path, False, committed, 25, 1, print)
        is None
    )
