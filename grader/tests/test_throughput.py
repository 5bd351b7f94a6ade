"""tests/submissions/throughput.py's steady rate: labs that end after the batch
was interrupted were killed, not graded, and do not count."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tests" / "submissions" / "throughput.py"


def _throughput():
    spec = importlib.util.spec_from_file_location("throughput", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOG = """[trace +10.0 s] w0 a 02_interleaved: graded {}
[trace +12.0 s] w0 prepared
[trace +20.0 s] w1 b 02_interleaved: graded {}
[trace +30.0 s] w0 a 04_sequential_addressing: graded {}
[trace +31.0 s] interrupted
[trace +32.0 s] w1 b 04_sequential_addressing: error {}
[trace +33.0 s] w2 c 02_interleaved: error {}
"""


def test_only_labs_before_the_interrupt_count():
    rate = _throughput().steady_rate(LOG)
    assert rate == {"student_labs": 2, "seconds": 20.0, "per_hour": 360, "from": 10.0, "to": 30.0}


def test_a_batch_that_ran_to_its_end_counts_every_lab():
    rate = _throughput().steady_rate(LOG.replace("interrupted", "w9 prepared"))
    assert rate["student_labs"] == 4 and rate["seconds"] == 23.0 and rate["per_hour"] == 626


def test_cpu_busy_is_the_share_not_idle_nor_waiting():
    cpu_busy = _throughput().cpu_busy
    # user nice system idle iowait irq softirq
    before = [100, 0, 50, 800, 50, 0, 0]
    after = [400, 0, 150, 1200, 150, 0, 0]
    assert cpu_busy(before, after) == 0.444  # 400 of 900 busy
    assert cpu_busy([], after) is None and cpu_busy(before, before) is None


def test_busy_is_the_median_over_the_steady_span():
    t = _throughput()
    samples = [
        {"t": 5.0, "cpu_busy": 0.1, "gpu_util": [0]},  # set-up: outside
        {"t": 12.0, "cpu_busy": 0.9, "gpu_util": [40, 60]},
        {"t": 14.0, "cpu_busy": 0.7, "gpu_util": [30, 30]},
        {"t": 16.0, "cpu_busy": 0.8, "gpu_util": []},
        {"t": 40.0, "cpu_busy": 0.2, "gpu_util": [90]},  # after: outside
    ]
    rate = t.steady_rate(LOG)
    assert t.busy_between(samples, rate) == {"samples": 3, "cpu_busy": 0.8, "gpu_util": 50}
    assert t.busy_between(samples, None) is None
    for s, mib in zip(samples, ([9], [100, 300], [200, 250], [], [999])):
        s["gpu_mem_mib"] = mib
    busy = t.busy_between(samples, rate)
    assert busy["gpu_mem_mib_max"] == 300 and busy["gpu_mem_mib_median"] == 300


HOLDS = """[trace +10.0 s] w0 a 02_interleaved: graded {}
[trace +14.0 s] w0 tests: waited 3.0 s, ran 4.0 s, started 0.4 s
[trace +16.0 s] w1 sanitizer memcheck: waited 0.0 s, ran 4.0 s, started 0.5 s
[trace +22.0 s] w2-timed timed alone: waited 9.0 s, ran 2.0 s
[trace +24.0 s] w0 tests alone: waited 1.0 s, ran 1.0 s
[trace +30.0 s] w0 a 04_sequential_addressing: graded {}
[trace +31.0 s] w1 tests: waited 0.0 s, ran 40.0 s
"""


def test_gpu_holds_are_measured_over_the_steady_span():
    t = _throughput()
    steady = t.steady_rate(HOLDS)  # from +10 to +30
    # In slots: +10..+14 and +12..+16 (8 s), and +10..+30 of the run that
    # ended at +31 (20 s): 28 s over 20. Alone: +20..+22 and +23..+24. Nothing
    # held: every gap (+16..+20, +22..+23, +24..+30) is in the long run, so none.
    assert t.gpu_holds(HOLDS, steady) == {
        "runs_in_slots": 1.4,
        "alone_share": 0.15,
        "idle_share": 0.0,
        "idle_while_timed_waits": 0.0,
    }
    without_long = HOLDS.replace("ran 40.0 s", "ran 0.5 s")
    # Idle now: +16..+20, +22..+23 and +24..+30, 11 of 20 s; +16..+20 of it
    # while the timed run that got the GPU at +20 waited (from +11).
    assert t.gpu_holds(without_long, steady)["idle_share"] == 0.55
    assert t.gpu_holds(without_long, steady)["idle_while_timed_waits"] == 0.2
    assert t.gpu_holds(HOLDS, None) is None


def test_holds_by_kind_sum_each_kind_of_run():
    t = _throughput()
    kinds = t.holds_by_kind(HOLDS)
    assert kinds["tests"] == {
        "runs": 2,
        "held_seconds": 44.0,
        "held_median": 22.0,
        "started_seconds": 0.4,
        "waited_seconds": 3.0,
    }
    assert kinds["sanitizer memcheck"]["started_seconds"] == 0.5
    assert kinds["timed alone"] == {
        "runs": 1,
        "held_seconds": 2.0,
        "held_median": 2.0,
        "started_seconds": 0.0,
        "waited_seconds": 9.0,
    }
    assert kinds["tests alone"]["runs"] == 1
    # A run that ends after the interrupt was killed: no figure of it counts.
    cut = t.holds_by_kind(
        HOLDS.replace("[trace +31.0 s] w1", "[trace +30.5 s] interrupted\n[trace +31.0 s] w1")
    )
    assert cut["tests"]["runs"] == 1 and cut["tests"]["held_seconds"] == 4.0


COMPLETE = """[trace +10.0 s] w0 a 02_interleaved: graded {}
[trace +11.0 s] w0 a 04_sequential_addressing: graded {}
[trace +11.5 s] w0 a: 2 timed part(s) wait
[trace +12.0 s] w1 b 02_interleaved: build_failed {}
[trace +13.0 s] w1 b 04_sequential_addressing: build_failed {}
[trace +13.5 s] w1 b: 0 timed part(s) wait
[trace +13.6 s] w1 b: done
[trace +20.0 s] w0-timed timed alone: waited 8.0 s, ran 1.0 s, started 1.0 s
[trace +20.1 s] w0 a: done
[trace +25.0 s] w0 c 02_interleaved: graded {}
[trace +30.0 s] w1 d 02_interleaved: graded {}
[trace +31.0 s] interrupted
[trace +31.5 s] w0-timed timed alone: waited 0.0 s, ran 0.0 s, started 0.1 s
[trace +31.6 s] w0 c: done
"""


def test_complete_rate_counts_the_labs_of_students_done_in_the_span():
    t = _throughput()
    steady = t.steady_rate(COMPLETE)  # +10 to +30: 5 labs after the first
    assert steady["student_labs"] == 5 and steady["per_hour"] == 900
    # Done in (+10, +30]: b (2 labs) and a (2 labs, after its timed turn); c and
    # d were graded but not done by +30 (c's "done" came after the interrupt).
    assert t.complete_rate(COMPLETE, steady) == {
        "student_labs": 4,
        "seconds": 20.0,
        "per_hour": 720,
        "timed_turns": 1,
        "unfinished_at_end": 2,
    }
    assert t.complete_rate(COMPLETE, None) is None


def test_a_span_without_timed_turns_says_so():
    t = _throughput()
    log = "\n".join(
        l for l in COMPLETE.splitlines() if "timed alone" not in l and " a: done" not in l
    )
    rate = t.complete_rate(log, t.steady_rate(log))
    assert rate["timed_turns"] == 0 and rate["student_labs"] == 2 and rate["unfinished_at_end"] == 4


def test_phases_are_the_labs_timing_over_the_steady_span():
    t = _throughput()
    log = """[trace +5.0 s] w0 a 02_interleaved: graded {'build': 9.0}
[trace +10.0 s] w0 a 04_sequential_addressing: graded {'build': 2.0, 'tests': 1.5}
[trace +20.0 s] w1 b 02_interleaved: graded {'build': 4.0, 'sanitizer': 8.0}
[trace +30.0 s] w1 b 04_sequential_addressing: build_failed {'build': 0.5}
"""
    steady = {"from": 10.0, "to": 30.0}  # the +5 line lies before it
    assert t.phases(log, steady) == {
        "build": {"labs": 3, "median": 2.0, "total": 6.5},
        "sanitizer": {"labs": 1, "median": 8.0, "total": 8.0},
        "tests": {"labs": 1, "median": 1.5, "total": 1.5},
    }
    assert t.phases(log, None) is None


def test_fractions_are_read_from_each_graded_result(tmp_path):
    t = _throughput()
    for student, labs in {
        "alice": [
            {"lab": "02_interleaved", "fraction": 0.28, "reference_fraction": 0.29},
            {"lab": "04_sequential_addressing", "fraction": None},  # failed: no figure
        ],
        "bob": [{"lab": "02_interleaved", "fraction": 0.01, "reference_fraction": 0.29}],
    }.items():
        (tmp_path / "students" / student).mkdir(parents=True)
        (tmp_path / "students" / student / "result.json").write_text(json.dumps({"labs": labs}))
    (tmp_path / "students" / "carol").mkdir()
    (tmp_path / "students" / "carol" / "result.json").write_text("not json")
    assert t.fractions(tmp_path, ["alice", "bob", "carol", "dave"]) == {
        "02_interleaved": {"reference": 0.29, "students": {"alice": 0.28, "bob": 0.01}}
    }


def test_fraction_spread_says_how_far_students_lie_from_the_reference():
    spread = _throughput().fraction_spread(
        {
            "02_interleaved": {
                "reference": 0.30,
                "students": {"a": 0.29, "b": 0.31, "c": 0.01, "d": 0.30},
            },
            "07_atomic_finish": {"reference": None, "students": {}},
        }
    )
    assert spread == {
        "02_interleaved": {
            "reference": 0.30,
            "students": 4,
            "min": 0.01,
            "median": 0.295,
            "max": 0.31,
            "within_5pct": 3,
        }
    }


def test_labs_graded_are_the_class_the_course_or_those_named():
    t = _throughput()
    assert t.graded_labs("class") == [
        "02_interleaved",
        "04_sequential_addressing",
        "07_atomic_finish",
        "08_max_reduction",
    ]
    course = t.graded_labs("course")
    assert len(course) == 11 and course[0] == "01_cpu_baseline" and course[-1].startswith("11_")
    assert t.graded_labs("01, 11") == ["01_cpu_baseline", "11_accurate_float_sum"]


def test_a_lab_the_class_leaves_untouched_is_expected_as_its_base():
    """Graded on more labs than class.toml's, each student's other labs are
    the solutions' (full) or the skeletons' (nothing implemented)."""
    check_class = _throughput().check_class
    labs = ["01_cpu_baseline", "04_sequential_addressing"]
    carol = {"base": "solutions", "expect": {"04_sequential_addressing": "read_past_end"}}
    bob = {"base": "skeletons", "expect": {"04_sequential_addressing": "zero_not_implemented"}}
    assert check_class.expectations(carol, labs) == {
        "04_sequential_addressing": "read_past_end",
        "01_cpu_baseline": "full",
    }
    assert check_class.expectations(bob, labs)["01_cpu_baseline"] == "zero_not_implemented"
    assert check_class.expectations(carol, None) == carol["expect"]
    # A lab not graded is not expected: lab 04 left out.
    assert check_class.expectations(carol, ["01_cpu_baseline"]) == {"01_cpu_baseline": "full"}


def test_student_latency_is_its_labs_in_a_row_then_its_turn():
    t = _throughput()
    log = """[trace +10.0 s] w0 a 02_interleaved: graded {'build': 2.0, 'tests': 3.0}
[trace +20.0 s] w0 a 04_sequential_addressing: graded {'build': 1.0}
[trace +26.0 s] w0 a: done
[trace +30.0 s] w1 b 02_interleaved: graded {'tests': 10.0}
[trace +31.0 s] interrupted
[trace +32.0 s] w1 b: done
"""
    # a: first lab started at +5 (its end less 5 s of phases), last graded at +20,
    # done at +26; b was done only after the interrupt.
    assert t.student_latency(log) == {
        "students": 1,
        "untimed_median": 15.0,
        "untimed_max": 15.0,
        "turn_wait_median": 6.0,
        "turn_wait_max": 6.0,
        "total_median": 21.0,
        "total_max": 21.0,
    }
    assert t.student_latency(log.replace("w0 a: done", "w0 a: waits")) is None


def test_a_student_not_graded_as_expected_keeps_their_result(tmp_path):
    # The batch's folder goes with the GPU machine: the result that holds the
    # failing case's seed must come back with the figures.
    out = tmp_path / "work" / "out"
    for name in ("erin-2", "frank"):
        (out / "students" / name).mkdir(parents=True)
        (out / "students" / name / "result.json").write_text(json.dumps({"who": name}))
        (out / "students" / name / "feedback.md").write_text(f"# {name}\n")
    dest = tmp_path / "figures" / "throughput-x-problems"
    problems = [
        "erin-2: 09_shuffle_vector_loads: expected full, got wrong_value",
        "erin-2: 11_accurate_float_sum: expected full, got ?",
        "gone: no result",
    ]
    kept = _throughput().keep_problems(out, problems, dest)
    assert kept == [
        "throughput-x-problems/erin-2/result.json",
        "throughput-x-problems/erin-2/feedback.md",
    ]
    assert json.loads((dest / "erin-2" / "result.json").read_text()) == {"who": "erin-2"}
    assert not (dest / "frank").exists()
    assert _throughput().keep_problems(out, [], tmp_path / "none") == []


def test_done_rate_is_the_class_pace_from_the_first_student_done_to_the_last():
    log = """[trace +10.0 s] w0 a 02_interleaved: graded {}
[trace +11.0 s] w1 b 02_interleaved: graded {}
[trace +20.0 s] w0 a 04_sequential_addressing: graded {}
[trace +30.0 s] w0 a: done
[trace +32.0 s] w1 b 04_sequential_addressing: graded {}
[trace +33.0 s] w0 c 02_interleaved: graded {}
[trace +40.0 s] w1 b: done
[trace +45.0 s] w0 c 04_sequential_addressing: graded {}
[trace +48.0 s] w0 c 08_max_reduction: graded {}
[trace +50.0 s] w0 c: done
[trace +51.0 s] interrupted
[trace +52.0 s] w1 d: done
"""
    rate = _throughput().done_rate(log)
    # b's 2 labs and c's 3, from a's done (30 s) to c's (50 s); d was killed.
    assert rate == {
        "students": 2,
        "student_labs": 5,
        "seconds": 20.0,
        "per_hour": 900,
        "first": 30.0,
    }
    assert (
        _throughput().done_rate(
            log.replace("[trace +40.0 s] w1 b: done\n", "").replace(
                "[trace +50.0 s] w0 c: done\n", ""
            )
        )
        is None
    )
