"""gpucheck's bookkeeping, which needs no GPU: partial runs joined into one
piece of evidence, and the options that split a part over GPU calls."""
import json

from grader.commands import gpucheck


def _sandbox(labs, code=0, full=True, seconds=100.0):
    return {"exit_code": code, "seconds": seconds, "full_marks": full,
            "labs_graded": list(labs), "output": f"graded {','.join(labs)}"}


def test_merge_keeps_both_sandbox_runs(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(
        {"machine": {"gpu": "H200"}, "parts": ["sandbox"], "seconds": 300.0,
         "sandbox": _sandbox(["01_cpu_baseline", "02_interleaved"])}))
    second.write_text(json.dumps(
        {"machine": {"gpu": "H200"}, "parts": ["sandbox"], "seconds": 280.0,
         "sandbox": _sandbox(["03_strided_index"], code=1, full=False)}))
    merged = gpucheck.merge([first, second])
    box = merged["sandbox"]
    assert [r["labs_graded"] for r in box["runs"]] == [
        ["01_cpu_baseline", "02_interleaved"], ["03_strided_index"]]
    assert box["labs_graded"] == ["01_cpu_baseline", "02_interleaved", "03_strided_index"]
    # One run short of full marks makes the whole part fail.
    assert box["exit_code"] == 1 and box["full_marks"] is False
    assert merged["seconds"] == 580.0


def test_three_runs_join_in_order():
    runs = [_sandbox([lab]) for lab in ("01_cpu_baseline", "02_interleaved", "03_strided_index")]
    joined = gpucheck._join_sandbox(gpucheck._join_sandbox(runs[0], runs[1]), runs[2])
    assert len(joined["runs"]) == 3 and joined["full_marks"] and joined["exit_code"] == 0


def test_unknown_sandbox_lab_is_refused(tmp_path, capsys):
    from grader import cli
    code = cli.main(["gpucheck", "--out", str(tmp_path), "--parts", "sandbox",
                     "--sandbox-labs", "01,99"])
    assert code != 0
    assert "unknown lab '99'" in capsys.readouterr().err
    assert not (tmp_path / "gpucheck.json").exists()
