"""The linked policy check compiles a lab file the way the build does
(grader/engine/policy/build_flags.py): the build's command read from
compile_commands.json, and compiler macros the same in both, so that no code
exists in what runs and not in what is checked (tests/attacks/attacks.toml,
the policy_by_* cases, grade the whole path)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.engine.policy import build_flags, symbols
from grader.infra import proc, toolchain

GXX = (
    "c++ -Itests/01_cpu_baseline-runner-labs.p -Itests -I../src/tests -Icommon "
    "-fdiagnostics-color=always -DNDEBUG -D_FILE_OFFSET_BITS=64 -Wall -std=c++17 -O3 -pthread "
    "-MD -MQ tests/01_cpu_baseline-runner-labs.p/x.cpp.o -MF tests/01_cpu_baseline-runner-labs.p/x.cpp.o.d "
    "-o tests/01_cpu_baseline-runner-labs.p/x.cpp.o -c ../src/labs/01_cpu_baseline/cpu_sum.cpp"
)
NVCC = (
    "ccache nvcc -DNDEBUG -Itests/07_atomic_finish-runner-labs.p --std=c++17 -O3 -arch=sm_90 "
    "-lineinfo -Xcompiler=-pthread -I ../src/common -MD -MT tests/07.p/r.cu.o -MF tests/07.p/r.cu.o.d "
    "-o tests/07.p/r.cu.o -c ../src/labs/07_atomic_finish/reduce.cu"
)


def test_clean_keeps_the_configuration_and_drops_the_files(tmp_path):
    build = tmp_path / "build"
    got = build_flags.clean(GXX.split(), build)
    assert got == [
        "c++",
        f"-I{build / 'tests/01_cpu_baseline-runner-labs.p'}",
        f"-I{build / 'tests'}",
        f"-I{tmp_path / 'src/tests'}",
        f"-I{build / 'common'}",
        "-fdiagnostics-color=always",
        "-DNDEBUG",
        "-D_FILE_OFFSET_BITS=64",
        "-Wall",
        "-std=c++17",
        "-O3",
        "-pthread",
    ]
    got = build_flags.clean(NVCC.split(), build)
    assert got[0] == "nvcc"  # the cache in front is not the compiler
    assert got[-3:] == ["-lineinfo", "-Xcompiler=-pthread", f"-I{tmp_path / 'src/common'}"]
    assert not {"-o", "-c", "-MD", "-MT", "-MF"} & set(got)
    assert not any(a.endswith((".o", ".d", ".cu")) for a in got)


def test_for_file_reads_the_runner_target_only(tmp_path):
    entries = [
        {
            "directory": str(tmp_path),
            "command": NVCC.replace("tests/07.p", "tests/labs-bench-07.p").replace("-O3", "-O1"),
            "file": "../src/labs/07_atomic_finish/reduce.cu",
            "output": "tests/labs-bench-07.p/r.cu.o",
        },
        {
            "directory": str(tmp_path),
            "command": NVCC,
            "file": "../src/labs/07_atomic_finish/reduce.cu",
            "output": "tests/07_atomic_finish-runner-labs.p/r.cu.o",
        },
    ]
    (tmp_path / "compile_commands.json").write_text(json.dumps(entries))
    got = build_flags.for_file(tmp_path, "07_atomic_finish-runner-labs", "reduce.cu")
    assert got is not None and "-O3" in got.command and "-O1" not in got.command
    assert got.directory == tmp_path and got.file == "../src/labs/07_atomic_finish/reduce.cu"
    assert build_flags.for_file(tmp_path, "08_max_reduction-runner-labs", "reduce.cu") is None
    assert (
        build_flags.for_file(tmp_path / "none", "07_atomic_finish-runner-labs", "reduce.cu") is None
    )


def test_optimised_reads_the_last_level():
    assert build_flags.optimised(["g++", "-O3"])
    assert build_flags.optimised(["nvcc", "-Xcompiler=-O2"])
    assert build_flags.optimised(["g++", "-O"])
    assert not build_flags.optimised(["g++"])  # GCC's default is -O0
    assert not build_flags.optimised(["g++", "-O3", "-O0"])


def preprocessed(command: list[str], cwd: Path, nvcc: bool, macros: bool) -> str:
    """What the command's preprocessor makes of its input (with macros: the
    macros it defines), run as the grader runs compiles."""
    dump = ["-Xcompiler=-dM" if nvcc else "-dM"] if macros else []
    done = subprocess.run(
        [*command, "-E", *dump],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env=toolchain.compile_env(),
    )
    if macros:
        return "\n".join(sorted(done.stdout.splitlines()))
    # Line markers differ (-g1 names the working folder): the code may not.
    return "\n".join(l for l in done.stdout.splitlines() if not re.match(r"# \d+ ", l))


# A lab file that would compile to other code if its name, its time of compile
# or the compiler's macros differed between the build and the check.
PROBE = """
const char* where() { return __FILE__; }
const char* when() { return __DATE__ " " __TIME__; }
"""


def check_against_build(tmp_path: Path, compiler: str, flags: list[str], name: str, nvcc: bool):
    """The build's compile of tree/labs/NAME from tree/build, and the check's
    compile of the same file as compile_facts runs it: the same preprocessed
    source and the same macros."""
    build = tmp_path / "tree" / "build"
    build.mkdir(parents=True)
    source = tmp_path / "tree" / "labs" / name
    source.parent.mkdir()
    source.write_text(PROBE)
    like = build_flags.BuildCompile([compiler, *flags], build, f"../labs/{name}")
    check = symbols.compile_command(source, tmp_path, [], False, symbols.Toolchain.find(), like)
    assert check[-4] == "-c" and check[-2] == "-o"
    assert like.builds(source) and check[-3] == like.file
    checked = [*check[:-4], check[-3]]  # the check's command, to preprocess only
    built = [*like.command, like.file]
    for macros in (False, True):
        assert preprocessed(checked, like.directory, nvcc, macros) == preprocessed(
            built, build, nvcc, macros
        )
    return check


@pytest.mark.parametrize("level", ["-O3", "-O0"])
def test_the_check_preprocesses_as_the_build_host(tmp_path, level):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ on this machine")
    flags = ["-DNDEBUG", "-std=c++17", level, "-pthread"]
    check = check_against_build(tmp_path, gxx, flags, "cpu_sum.cpp", nvcc=False)
    assert "-fno-inline" in check  # calls stay calls


@pytest.mark.parametrize("level", ["-O3", "-O0"])
def test_the_check_preprocesses_as_the_build_cuda(tmp_path, level):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    flags = ["-DNDEBUG", "--std=c++17", level, "-arch=sm_90", "-lineinfo"]
    check = check_against_build(tmp_path, nvcc, flags, "reduce.cu", nvcc=True)
    assert "-keep" in check  # the PTX, for the device facts


def test_every_build_compiles_at_the_same_date(monkeypatch, tmp_path):
    seen = {}

    def run(cmd, **kw):
        seen.update(kw.get("env") or {})
        return proc.Finished(0, False, False, "", 0.0)

    monkeypatch.setattr(toolchain.proc, "run", run)
    toolchain.build(tmp_path, "x")
    assert seen.get("SOURCE_DATE_EPOCH") == toolchain.COMPILE_EPOCH


def test_the_check_compiles_where_the_build_does_and_at_its_date(monkeypatch, tmp_path):
    build = tmp_path / "tree" / "build"
    build.mkdir(parents=True)
    source = tmp_path / "tree" / "labs" / "cpu_sum.cpp"
    source.parent.mkdir()
    source.write_text(PROBE)
    like = build_flags.BuildCompile(["g++", "-O3"], build, "../labs/cpu_sum.cpp")
    calls = []

    def run(cmd, **kw):
        calls.append((cmd, kw))
        return proc.Finished(0, False, False, "", 0.0)

    monkeypatch.setattr(symbols.proc, "run", run)
    symbols.compile_facts(
        source,
        include_dirs=[],
        rdc=False,
        work=tmp_path / "w",
        timeout=60,
        instructions=(),
        like=like,
    )
    compile_cmd, kw = calls[0]
    assert kw["cwd"] == build and "../labs/cpu_sum.cpp" in compile_cmd
    assert kw["env"]["SOURCE_DATE_EPOCH"] == toolchain.COMPILE_EPOCH
