"""A fault of the machine (a full or read-only disk, a quota, memory run out)
is never a grade: a build, or the policy check's own compile, that failed for
the machine's sake leaves the lab not graded (LabStatus.ERROR, which a batch
never keeps and grades again on its next run), never "does not compile" or
"policy". Text the student's code controls (an #error, a static_assert, the
compiler's quote of a source line) is never evidence of such a fault."""

import os
import shutil
import subprocess
from collections import namedtuple
from pathlib import Path

import pytest

from grader import labmeta
from grader.batch import guard as batch_guard
from grader.engine.policy import build_flags
from grader.engine import lab_grading
from grader.engine.policy import lab_policy, policy, symbols
from grader.infra import toolchain
from grader.infra.toolchain import REPO
from grader.status import LabStatus

COURSE = labmeta.load()

# What gcc 12 printed with TMPDIR on a full disk (the incident's own words).
GCC_FULL_TMPDIR = """\
[1/2] Compiling C++ object tests/runner-01.p/cpu_reduce.cpp.o
FAILED: tests/runner-01.p/cpu_reduce.cpp.o
../labs/01_cpu_sum/cpu_reduce.cpp:4:67: fatal error: error writing to /tmp/full/ccX.s: \
No space left on device
    4 | int f(){return 0;}
      |                   ^
compilation terminated.
ninja: build stopped: subcommand failed.
"""

MACHINE_LOGS = [
    GCC_FULL_TMPDIR,
    "/tmp/ccX.s: Fatal error: can't write 55 bytes to section .text of x.o: "
    "'No space left on device'\n",
    "/usr/bin/ld: final link failed: No space left on device\n",
    "x.cu(12): catastrophic error: could not write /tmp/tmpxft_1.cpp: Disk quota exceeded\n",
    "cc1plus: fatal error: cannot create x.o: Read-only file system\n",
    "virtual memory exhausted: Cannot allocate memory\n",
    "nvcc fatal   : Failed to preprocess host compiler properties.\n",
    "nvcc fatal   : Could not open output file '/nope/tmpxft_000023e6_0000000a'\n",
]

# The same words, written by the student's code: the code's own failure.
STUDENT_LOGS = [
    "labs/01/cpu_sum.cpp:12:2: error: #error No space left on device\n",
    "x.cpp:1:2: error: #error fatal error: error writing to /tmp/x.s: No space left on device\n"
    "    1 | #error fatal error: error writing to /tmp/x.s: No space left on device\n"
    "      |  ^~~~~\n",
    "x.cpp:2:19: error: fatal error: error writing to /tmp/x.s: No space left on device\n",
    "x.cpp:3:15: error: static assertion failed: Disk quota exceeded\n",
    "x.cu:1:2: error: #error Read-only file system\n",
    "x.cu(1): error: #error directive: Cannot allocate memory\n",
    "x.cpp:1: Error: No space left on device\n",  # an asm(".error ...") of the student's
    "x.cpp:1:10: fatal error: No space left on device: No such file or directory\n",
    "x.cpp:3:66: warning: 'void g()' is deprecated: No space left on device "
    "[-Wdeprecated-declarations]\nx.cpp:9:1: error: expected ';'\n",
]


@pytest.mark.parametrize("log", MACHINE_LOGS)
def test_the_machines_words_in_a_failed_build_are_a_machine_fault(log):
    assert toolchain.BuildResult("t", False, log).machine_fault
    assert toolchain.BuildResult("t", True, log).machine_fault == ""  # a build that worked


@pytest.mark.parametrize("log", STUDENT_LOGS)
def test_the_same_words_from_the_students_code_are_not(log):
    assert toolchain.BuildResult("t", False, log).machine_fault == ""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_a_real_compiler_that_cannot_write_its_output_is_a_machine_fault(tmp_path):
    """g++ writing its assembly to a full device (/dev/full answers every
    write with ENOSPC) says so on a line that names the .cpp."""
    src = tmp_path / "x.cpp"
    src.write_text("int f(int a) { return a + 1; }\n")
    for colour in ("never", "always"):  # the build's compiles colour their words
        done = subprocess.run(
            ["g++", f"-fdiagnostics-color={colour}", "-S", str(src), "-o", "/dev/full"],
            capture_output=True,
            text=True,
        )
        print(done.stderr)
        assert done.returncode != 0 and ".cpp:" in done.stderr
        fault = toolchain.BuildResult("t", False, done.stderr).machine_fault
        assert "No space left on device" in fault


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_a_real_compilers_words_quoted_from_the_code_are_not(tmp_path):
    src = tmp_path / "x.cpp"
    src.write_text(
        "#error fatal error: error writing to /tmp/x.s: No space left on device\n"
        '#pragma GCC error "fatal error: error writing to /tmp/x.s: Disk quota exceeded"\n'
        'static_assert(false, "Read-only file system");\n'
    )
    done = subprocess.run(
        ["g++", "-fdiagnostics-color=always", "-c", str(src), "-o", str(tmp_path / "x.o")],
        capture_output=True,
        text=True,
    )
    print(done.stderr)
    assert done.returncode != 0 and "No space left on device" in done.stderr
    assert toolchain.BuildResult("t", False, done.stderr).machine_fault == ""


@pytest.mark.parametrize("log", [GCC_FULL_TMPDIR, ""])
def test_grade_lab_leaves_a_build_the_machine_failed_not_graded(monkeypatch, log):
    monkeypatch.setattr(toolchain, "build", lambda *a, **k: toolchain.BuildResult("t", False, log))
    options = lab_grading.GradeOptions(timeout=60, perf=False, sanitize=False)
    result = lab_grading.grade_lab(COURSE.lab("01"), Path("/nonexistent-build"), options=options)
    # A build that failed without a word could not write its output: ninja names what failed.
    assert result.status == LabStatus.ERROR, (result.status, result.reason)
    assert ("No space left on device" if log else toolchain.SILENT) in result.reason


def checked(monkeypatch, tmp_path, compiled: symbols.Compiled) -> policy.LinkedCheck:
    """policy.check_linked of lab 01's solution, the student's compile answering `compiled`."""
    monkeypatch.setattr(symbols, "compile_facts", lambda *a, **k: compiled)
    lab = COURSE.lab("01")
    name = lab.files[0]
    return policy.check_linked(
        lab,
        REPO / "solutions" / lab.id / name,
        skeleton_file=REPO / "labs" / lab.id / name,
        reference_file=None,
        include_dirs=[REPO / "common"],
        work=tmp_path / "work",
    )


@pytest.mark.parametrize(
    "log", ["", "x.cpp:4:67: fatal error: error writing to /tmp/ccX.s: No space left on device"]
)
def test_the_policy_checks_own_compile_failed_by_the_machine_is_a_fault(monkeypatch, tmp_path, log):
    """The incident's 'could not compile or read this file the way it must:
    unknown' was a compile whose output could not be written: not graded."""
    result = checked(monkeypatch, tmp_path, symbols.Compiled("x.cpp", False, log))
    assert result.fault and not result.judged, result
    # Through the lab's check, as grade_lab reads it: a fault, never a refusal.
    monkeypatch.setattr(policy, "check_linked", lambda *a, **k: result)
    like = build_flags.BuildCompile(["g++"], tmp_path, "cpu_reduce.cpp")
    monkeypatch.setattr(build_flags, "for_file", lambda *a: like)
    lab = COURSE.lab("01")
    found = lab_policy.linked_violations(
        lab, REPO / "solutions" / lab.id, REPO, tmp_path / "work", tmp_path, "t"
    )
    assert found and all(v.fault for v in found)
    graded = lab_grading.blank_result(lab, LabStatus.GRADED, "")
    lab_policy.refuse(graded, found)
    assert graded.status == LabStatus.ERROR and "unknown" not in graded.reason


def test_the_students_own_compile_error_in_the_policy_check_is_still_refused(monkeypatch, tmp_path):
    result = checked(
        monkeypatch,
        tmp_path,
        symbols.Compiled("x.cpp", False, "x.cpp:3:1: error: 'LAB_CHECK' was not declared"),
    )
    assert not result.fault and not result.judged


# -- the batch refuses a temporary folder the compilers cannot use -------------


def test_check_space_refuses_a_tmpdir_that_does_not_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "nowhere"))
    with pytest.raises(toolchain.SetupError, match="nowhere is not a folder that exists"):
        batch_guard.check_space(tmp_path)


def test_check_space_refuses_a_tmpdir_it_cannot_write(monkeypatch, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):  # root writes anywhere: /proc takes no new files
        locked = Path("/proc")
    monkeypatch.setenv("TMPDIR", str(locked))
    with pytest.raises(toolchain.SetupError, match=f"cannot write in TMPDIR={locked}"):
        batch_guard.check_space(tmp_path)


def test_check_space_measures_the_tmpdirs_own_disk(monkeypatch, tmp_path):
    """TMPDIR on a nearly full disk is refused, though Python's tempfile (which
    falls back to /tmp) would have measured another."""
    tools = tmp_path / "tools-tmp"
    tools.mkdir()
    monkeypatch.setenv("TMPDIR", str(tools))
    measured = []

    def usage(where):
        measured.append(Path(where))
        return namedtuple("usage", "total used free")(
            1 << 40, 0, (5 << 20) if where == tools else 1 << 40
        )

    monkeypatch.setattr(batch_guard.shutil, "disk_usage", usage)
    with pytest.raises(toolchain.SetupError, match=f"{tools} has 5 MB free"):
        batch_guard.check_space(tmp_path / "out")
    assert tools in measured
