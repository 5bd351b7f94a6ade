"""The course file (grader/labs.toml) is strict: labmeta validates it against a
schema before anything uses it, and calibrate edits only the values it means to,
keeping every comment, and never writes a file that would not validate."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader import cli, labmeta
from grader.commands import calibrate
from grader.commands.calibrate import Calibration
from grader.labmeta import CourseFileError

REAL = labmeta.LABS_TOML
TEXT = REAL.read_text()


def copy_with(tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    """labs.toml with the first `count` occurrences of old replaced by new."""
    assert TEXT.count(old) >= count, old
    path = tmp_path / "labs.toml"
    path.write_text(TEXT.replace(old, new, count))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(CourseFileError) as e:
        labmeta.load(path)
    assert str(path) in str(e.value)
    return e.value.problems


# --- validation -----------------------------------------------------------------------------


def test_the_real_course_file_validates():
    course = labmeta.load()
    assert len(course.labs) == 12 and course.gpu
    labmeta.validate(tomllib.loads(TEXT))


def test_lab_12_needs_two_gpus_and_says_so_on_one():
    from grader.engine.lab_grading import cannot_grade, checker_target

    lab = labmeta.load().lab("12")
    assert lab.min_gpus == 2 and lab.needs_gpu and lab.spans_gpus
    assert checker_target(lab) == "checker-gpu_allreduce"
    one = cannot_grade(lab, 1)
    assert one is not None and "cannot be graded on this machine" in one
    assert "needs 2 or more NVIDIA GPUs" in one and "this machine has 1" in one
    # Behind the trusted checker: with enough GPUs nothing stands in the way.
    assert cannot_grade(lab, 2) is None and cannot_grade(lab, 8) is None
    assert cannot_grade(labmeta.load().lab("09"), 1) is None
    assert not labmeta.load().lab("09").spans_gpus


@pytest.mark.parametrize("value", ["0", "9", "1.5", '"two"', "true"])
def test_min_gpus_must_be_a_count_of_gpus(tmp_path, value):
    path = copy_with(tmp_path, "min_gpus = 2", f"min_gpus = {value}")
    assert any("[labs.12_multi_gpu_allreduce] min_gpus" in p for p in problems(path))


def test_a_misspelt_forbidden_names_the_lab_and_the_key(tmp_path):
    path = copy_with(
        tmp_path,
        "threshold = 0.16\nfloor = 0.08\nforbidden = [",
        "threshold = 0.16\nfloor = 0.08\nforbiden = [",
    )
    found = problems(path)
    assert len(found) == 1
    assert "[labs.02_interleaved]" in found[0] and "forbiden" in found[0]
    assert "unknown key" in found[0] and "did you mean 'forbidden'" in found[0]


def test_builds_on_names_an_earlier_lab_per_contract():
    course = labmeta.load()
    assert course.lab("09_shuffle_vector_loads").previous("max") == "08_max_reduction"
    assert course.lab("09_shuffle_vector_loads").previous("sum") == "07_atomic_finish"
    assert course.lab("08_max_reduction").previous("max") == "06_grid_stride_shared"
    assert course.lab("02_interleaved").previous("sum") is None


@pytest.mark.parametrize(
    "value", ['"04_sequential_addressing"', '"12_no_such_lab"', "3", '{sum = "not a lab id!"}']
)
def test_builds_on_must_name_an_earlier_lab(tmp_path, value):
    path = copy_with(tmp_path, 'builds_on = "03_strided_index"', f"builds_on = {value}")
    assert any("[labs.04_sequential_addressing] builds_on" in p for p in problems(path))


def test_the_tree_shapes_of_labs_02_to_04_are_data():
    shapes = {lab.id[:2]: lab.tree for lab in labmeta.load().labs if lab.tree}
    assert shapes == {"02": "interleaved", "03": "strided", "04": "sequential"}


def test_an_unknown_tree_shape_fails(tmp_path):
    path = copy_with(tmp_path, 'tree = "strided"', 'tree = "stridden"')
    found = problems(path)
    assert len(found) == 1 and "[labs.03_strided_index] tree = 'stridden'" in found[0]
    assert "interleaved, strided, sequential" in found[0]


def test_an_unknown_top_level_table_fails(tmp_path):
    path = copy_with(tmp_path, "[ceilings]", "[ceiling]")
    found = problems(path)
    assert len(found) == 1 and "ceiling" in found[0] and "unknown table" in found[0]


def test_a_threshold_given_as_a_string_fails(tmp_path):
    found = problems(copy_with(tmp_path, "threshold = 0.16\n", 'threshold = "0.16"\n'))
    assert len(found) == 1
    assert "[labs.02_interleaved] threshold" in found[0] and "must be a number" in found[0]


def test_a_threshold_out_of_range_fails(tmp_path):
    found = problems(copy_with(tmp_path, "threshold = 0.16\n", "threshold = 3.0\n"))
    assert len(found) == 1
    assert "[labs.02_interleaved] threshold = 3.0" in found[0] and "1.5" in found[0]
    found = problems(copy_with(tmp_path, "threshold = 0.16\n", "threshold = 0\n"))
    assert "[labs.02_interleaved] threshold = 0" in found[0]


def test_a_floor_above_the_threshold_fails(tmp_path):
    found = problems(copy_with(tmp_path, "floor = 0.08\n", "floor = 0.2\n"))
    assert len(found) == 1
    assert "[labs.02_interleaved] floor = 0.2" in found[0] and "threshold" in found[0]


def test_every_problem_is_listed_not_just_the_first(tmp_path):
    text = (
        TEXT.replace("[ceilings]", "[ceiling]")
        .replace('kind = "gpu_max"', 'kind = "gpu_min"')
        .replace(
            "points_performance = 4\nthreshold = 0.123",
            "points_performance = -4\nthreshold = 0.123",
        )
        .replace('files = ["cpu_sum.cpp"]', "files = []")
        .replace('anchor_gbps = { "20" = 217', 'anchor_gbps = { "twenty" = 217')
        .replace("beats_cub = true", 'beats_cub = "yes"')
        .replace("[peers.cub_max]\ntitle", "[peers.cub_max]\ntitel")
    )
    path = tmp_path / "labs.toml"
    path.write_text(text)
    with pytest.raises(CourseFileError) as e:
        labmeta.load(path)
    found = e.value.problems
    expected = [
        ("top level", "ceiling"),
        ("[labs.08_max_reduction]", "kind"),
        ("[labs.03_strided_index]", "points_performance"),
        ("[labs.01_cpu_baseline]", "files"),
        ("[labs.02_interleaved]", "anchor_gbps"),
        ("[labs.09_shuffle_vector_loads]", "beats_cub"),
        ("[peers.cub_max]", "titel"),
    ]
    assert len(found) == len(expected), found
    for where, key in expected:
        assert any(where in p and key in p for p in found), (where, key, found)
    message = str(e.value)
    assert message.startswith(f"{path}: {len(expected)} problems")
    assert all(p in message for p in found)


def test_missing_keys_and_tables_and_wrong_shapes(tmp_path):
    found = problems(copy_with(tmp_path, "points_correctness = 6\n", ""))
    assert found == ["[labs.01_cpu_baseline] points_correctness: missing (required)"]
    found = problems(copy_with(tmp_path, '[course]\ngpu = "NVIDIA H200"', "[course]"))
    assert found == ["[course] gpu: missing (required)"]
    found = problems(copy_with(tmp_path, '"NVIDIA H200" = 4260.0', '"NVIDIA H200" = -1'))
    assert len(found) == 1 and "[ceilings] 'NVIDIA H200'" in found[0]
    found = problems(copy_with(tmp_path, '"cudaMemcpy", ', '"", '))
    assert len(found) == 1 and "[labs.02_interleaved] forbidden" in found[0]
    found = problems(copy_with(tmp_path, "[labs.02_interleaved]", "[labs.01_interleaved]"))
    # ... and lab 03, which builds on 02_interleaved, now names a lab that is gone
    assert len(found) == 2 and "number 01 is also lab 01_cpu_baseline" in found[1]
    assert "[labs.03_strided_index] builds_on = '02_interleaved'" in found[0]
    found = problems(copy_with(tmp_path, "rdc = true", "rdc = 1"))
    assert len(found) == 1 and "[labs.10_nested_dynamic] rdc" in found[0]


def test_a_file_that_is_not_toml_names_the_file(tmp_path):
    found = problems(copy_with(tmp_path, "floor = 0.08\n", "floor = \n"))
    assert len(found) == 1 and "not valid TOML" in found[0]


def test_the_cli_prints_one_clear_error_and_exits_2(tmp_path, monkeypatch, capsys):
    bad = copy_with(tmp_path, "forbidden = [", "forbiden = [")
    real_load = labmeta.load
    monkeypatch.setattr(labmeta, "load", lambda path=bad: real_load(bad))
    assert cli.main(["gpucheck", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: 1 problem in the course file:")
    assert "[labs.01_cpu_baseline] forbiden: unknown key" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_the_meson_helper_says_what_is_wrong(tmp_path):
    bad = copy_with(tmp_path, "threshold = 0.49", "threshold = 4.9")
    run = subprocess.run(
        [sys.executable, str(REAL.parent / "labmeta.py"), "list", str(bad)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and run.stdout == ""
    assert "[labs.01_cpu_baseline] threshold = 4.9" in run.stderr
    assert "Traceback" not in run.stderr


# --- calibrate's edit -----------------------------------------------------------------------


def cal(lab: str, threshold: float, floor: float) -> Calibration:
    return Calibration(lab, [threshold / 0.85], threshold, floor, 0.0)


def test_calibrate_changes_only_threshold_floor_and_gpu(tmp_path):
    path = tmp_path / "labs.toml"
    path.write_text(TEXT)
    cals = [
        cal("02_interleaved", 0.17, 0.085),
        cal("11_accurate_float_sum", 0.7, 0.35),
        cal("01_cpu_baseline", 0.5, 0.25),
    ]
    calibrate.write(cals, 'NVIDIA "H100" 80GB HBM3', path)
    before, after = TEXT.splitlines(), path.read_text().splitlines()
    assert len(before) == len(after)
    changed = {i: (a, b) for i, (a, b) in enumerate(zip(before, after)) if a != b}
    assert sorted(b for _, b in changed.values()) == sorted(
        [
            'gpu = "NVIDIA \\"H100\\" 80GB HBM3"   # thresholds below were calibrated on this GPU',
            "threshold = 0.17",
            "floor = 0.085",
            "threshold = 0.7",
            "floor = 0.35",
            "threshold = 0.5",
            "floor = 0.25",
        ]
    )
    # Every comment line, and every other line, is as it was.
    assert all(not a.lstrip().startswith("#") for a, _ in changed.values())
    assert [x for x in before if x.lstrip().startswith("#")] == [
        x for x in after if x.lstrip().startswith("#")
    ]
    old, new = tomllib.loads(TEXT), tomllib.loads(path.read_text())
    old["course"]["gpu"] = 'NVIDIA "H100" 80GB HBM3'
    for c in cals:
        old["labs"][c.lab].update(threshold=c.threshold, floor=c.floor)
    assert new == old
    assert labmeta.load(path).lab("02").threshold == 0.17
    assert [p.name for p in tmp_path.iterdir()] == ["labs.toml"]  # no temporary file left


def test_calibrate_keeps_crlf_line_ends_and_trailing_comments(tmp_path):
    path = tmp_path / "labs.toml"
    text = TEXT.replace("threshold = 0.16\n", "threshold = 0.16   # was 0.2\n")
    path.write_bytes(text.replace("\n", "\r\n").encode())
    calibrate.write([cal("02_interleaved", 0.18, 0.09)], "NVIDIA H200", path)
    expected = text.replace("threshold = 0.16   #", "threshold = 0.18   #").replace(
        "floor = 0.08\n", "floor = 0.09\n"
    )
    assert path.read_bytes() == expected.replace("\n", "\r\n").encode()


@pytest.mark.parametrize(
    "threshold, floor", [(-0.2, -0.1), (0.0, 0.0), (2.5, 1.25), (float("nan"), 0.1), (0.1, 0.2)]
)
def test_calibrate_refuses_to_write_a_file_that_would_not_validate(tmp_path, threshold, floor):
    path = tmp_path / "labs.toml"
    path.write_text(TEXT)
    cals = [cal("04_sequential_addressing", 0.2, 0.1), cal("02_interleaved", threshold, floor)]
    with pytest.raises(CourseFileError) as e:
        calibrate.write(cals, "NVIDIA H200", path)
    assert "[labs.02_interleaved]" in str(e.value)
    assert path.read_text() == TEXT
    assert [p.name for p in tmp_path.iterdir()] == ["labs.toml"]


def test_calibrate_refuses_an_invalid_course_file_before_editing(tmp_path):
    path = copy_with(tmp_path, "forbidden = [", "forbiden = [")
    before = path.read_text()
    with pytest.raises(CourseFileError, match=r"\[labs.01_cpu_baseline\] forbiden"):
        calibrate.write([cal("02_interleaved", 0.17, 0.085)], "NVIDIA H200", path)
    assert path.read_text() == before


def test_calibrate_refuses_a_lab_the_file_does_not_have(tmp_path):
    path = tmp_path / "labs.toml"
    path.write_text(TEXT)
    with pytest.raises(CourseFileError, match="12_new"):
        calibrate.write([cal("12_new", 0.17, 0.085)], "NVIDIA H200", path)
    assert path.read_text() == TEXT


def test_calibrate_edits_only_inside_its_lab_table(tmp_path):
    # A lab whose threshold line is not a plain `threshold = <number>` line, and a
    # multi-line title holding text that looks like one: nothing is guessed.
    text = TEXT.replace(
        'title = "Interleaved addressing"', 'title = """Interleaved\nthreshold = 0.5\n"""'
    )
    with pytest.raises(
        CourseFileError,
        match=r"\[labs.02_interleaved\] threshold: calibrate "
        r"found 2 lines",
    ):
        calibrate.edit(text, [cal("02_interleaved", 0.17, 0.085)], "NVIDIA H200")
    text = TEXT.replace("threshold = 0.16\n", "threshold = 0.16 0.2\n")  # not even TOML
    with pytest.raises(CourseFileError, match="not valid TOML"):
        calibrate.edit(text, [cal("02_interleaved", 0.17, 0.085)], "NVIDIA H200")
    # The lab next to the one calibrated keeps its values, and so does every other table.
    new = calibrate.edit(TEXT, [cal("03_strided_index", 0.2, 0.1)], "NVIDIA H200")
    assert new == TEXT.replace("threshold = 0.123\nfloor = 0.061", "threshold = 0.2\nfloor = 0.1")


@pytest.mark.parametrize(
    "gpu_count, lab, words",
    [
        (0, "02", "not run: this machine has no NVIDIA GPU"),
        (0, "12", "not run: this machine has no NVIDIA GPU"),
        (1, "12", "cannot be graded on this machine"),
    ],
)
def test_grade_builds_a_lab_it_cannot_run_and_says_why(monkeypatch, gpu_count, lab, words):
    from grader.commands import grade
    from grader.infra import gpus, toolchain

    built: list = []
    monkeypatch.setattr(toolchain, "configure", lambda *a, **k: None)
    monkeypatch.setattr(
        toolchain,
        "build",
        lambda d, t, timeout=0: built.append(t) or toolchain.BuildResult(t, True),
    )
    monkeypatch.setattr(gpus, "list_gpus", lambda: [object()] * gpu_count)
    messages: list[str] = []
    report = grade.grade([lab], progress=messages.append)
    (r,) = report.labs
    assert r.status == "skipped" and r.reason.startswith(words) and report.max_points == 0
    assert built[-1].endswith("labs") and "building only" in messages[-1]


def test_grade_on_two_gpus_builds_lab_12s_checker_and_runner_and_grades_it(monkeypatch):
    """Lab 12 is behind the trusted checker: on two GPUs `grade 12` builds
    checker-gpu_allreduce and grades the lab's runner like any other lab."""
    from grader.commands import grade
    from grader.engine import lab_grading
    from grader.infra import gpus, toolchain

    built: list = []
    monkeypatch.setattr(toolchain, "configure", lambda *a, **k: None)
    monkeypatch.setattr(
        toolchain,
        "build",
        lambda d, t, timeout=0: built.append(t) or toolchain.BuildResult(str(t), True),
    )
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpus, "list_gpus", lambda: [object()] * 2)
    graded: list[str] = []

    def grade_lab(lab, build_dir, **kw):
        graded.append(lab.id)
        return lab_grading.blank_result(lab, lab_grading.LabStatus.GRADED, "")

    monkeypatch.setattr(grade, "grade_lab", grade_lab)
    grade.grade(["12"], progress=lambda *_: None)
    lab = labmeta.load().lab("12")
    assert built == [["checker-gpu_allreduce"]] and graded == [lab.id]
    assert lab_grading.runner_target(lab, "labs") == "12_multi_gpu_allreduce-runner-labs"
