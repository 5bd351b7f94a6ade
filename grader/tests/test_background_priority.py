"""What shares the machine with a timed run yields the CPU to it
(proc.BACKGROUND_NICE says why): builds, policy compiles and untimed checker
runs start at the lowest priority, timed runs at the grader's own. Each fake
program here writes the nice value it runs at (and its autogroup's, where the
kernel has autogroups) to a file. Everything here runs on the CPU."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from grader.engine import checker_passes, checker_run
from grader.engine.policy import symbols
from grader.infra import bwrap, proc, sandbox_build, toolchain
from grader.infra.runner import RunnerSpec

# Field 19 of /proc/PID/stat is the nice value; the name in field 2 is "(sh)".
REPORT = """awk '{print $19}' /proc/$$/stat > "$NICE_FILE"
if [ -r /proc/self/autogroup ]; then sed 's/.*nice //' /proc/self/autogroup >> "$NICE_FILE"; fi
"""

OWN = os.nice(0)
HAS_AUTOGROUP = Path("/proc/self/autogroup").exists()

pytestmark = pytest.mark.skipif(
    OWN >= proc.BACKGROUND_NICE, reason=f"the tests themselves run at nice {OWN}: no difference"
)


def _reported(path: Path) -> list[int]:
    return [int(v) for v in path.read_text().split()]


def _expect(path: Path, background: bool) -> None:
    got = _reported(path)
    assert got[0] == (proc.BACKGROUND_NICE if background else OWN)
    if HAS_AUTOGROUP:
        assert got[1] == (proc.BACKGROUND_NICE if background else 0)


def _fake_checker(tmp_path: Path) -> Path:
    """Lists one test and, when run, reports its priority (no results: the
    test reads as not run, which these tests do not look at)."""
    script = tmp_path / "checker"
    script.write_text(
        '#!/bin/sh\ncase "$1" in --gtest_list_tests) printf "Suite.\\n  Case\\n"; exit 0;; esac\n'
        + REPORT
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("background", [True, False])
def test_proc_run_lowers_a_background_run_only(tmp_path, background):
    out = tmp_path / "nice"
    done = proc.run(
        ["/bin/sh", "-c", REPORT],
        timeout=30,
        env={**os.environ, "NICE_FILE": str(out)},
        background=background,
    )
    assert done.ok, done.output
    _expect(out, background)


def test_a_missing_background_program_raises_as_popen_does():
    """Behind background_command's shell a missing compiler would be exit 127,
    a failed build a batch puts on the student; it must stay an error of the
    machine."""
    with pytest.raises(FileNotFoundError):
        proc.run(["no-such-program-here"], timeout=30, background=True)
    with pytest.raises(FileNotFoundError):
        proc.run(["/no/such/program"], timeout=30, background=True)


@pytest.mark.parametrize("perf", [False, True])
def test_an_untimed_checker_run_is_background_and_a_timed_one_is_not(tmp_path, perf):
    checker = _fake_checker(tmp_path)
    out = tmp_path / "nice"
    checker_run.run_checker(
        checker,
        "04_sequential_addressing",
        RunnerSpec(checker),
        checker_run.CheckerOptions(
            perf=perf, env={**os.environ, "NICE_FILE": str(out)}, timeout=30
        ),
    )
    _expect(out, background=not perf)


def test_the_tests_and_tools_passes_run_in_the_background(tmp_path):
    checker = _fake_checker(tmp_path)
    out = tmp_path / "nice"
    checker_passes.run_passes(
        checker,
        "04_sequential_addressing",
        [checker_passes.Pass("tests", RunnerSpec(checker))],
        checker_run.CheckerOptions(env={**os.environ, "NICE_FILE": str(out)}, timeout=30),
    )
    _expect(out, background=True)


def test_a_build_runs_in_the_background(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ninja = bin_dir / "ninja"
    ninja.write_text("#!/bin/sh\n" + REPORT)
    ninja.chmod(0o755)
    out = tmp_path / "nice"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("NICE_FILE", str(out))
    assert toolchain.build(tmp_path, "x").ok
    _expect(out, background=True)


def test_a_policy_compile_runs_in_the_background(tmp_path, monkeypatch):
    out = tmp_path / "nice"
    monkeypatch.setenv("NICE_FILE", str(out))
    assert symbols.run(["/bin/sh", "-c", REPORT], timeout=30).rc == 0
    _expect(out, background=True)


def test_a_sandboxed_build_runs_in_the_background(tmp_path, monkeypatch):
    """bwrap gives the build a session of its own, so an autogroup of its own
    where the kernel groups by session: it is lowered again inside."""
    ok, why = bwrap.available()
    if not ok:
        pytest.skip(f"no sandbox here: {why}")
    tree = tmp_path / "tree"
    (tree / "build").mkdir(parents=True)
    ninja = tree / "fake-ninja"  # inside the tree, which the sandbox binds
    ninja.write_text("#!/bin/sh\n" + REPORT.replace('"$NICE_FILE"', "nice"))
    ninja.chmod(0o755)
    monkeypatch.setattr(sandbox_build, "_real_ninja", lambda: str(ninja))
    # Inside the sandbox the write is unprivileged, and the kernel refuses one
    # within 0.1 s of any other process's write, a privileged one too
    # (proc.BACKGROUND_NICE): beside other runs that lower theirs (CI's other
    # tests, a batch's workers) a build may keep its group's 0 after its three
    # tries, never its own nice value. So: its own every time, its group's
    # within a few builds.
    for _ in range(5):
        assert sandbox_build.build(tree / "build", "x", extra_ro=[], tree=tree).ok
        got = _reported(tree / "nice")
        assert got[0] == proc.BACKGROUND_NICE
        if not HAS_AUTOGROUP or got[1] == proc.BACKGROUND_NICE:
            return
        time.sleep(0.5)
    pytest.fail(f"the sandboxed build's autogroup stayed at nice {got[1]} in 5 builds")
