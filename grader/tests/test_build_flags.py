"""The linked policy check compiles a lab file the way the build does
(grader/engine/build_flags.py): the build's command read from
compile_commands.json, and compiler macros the same in both, so that no code
exists in what runs and not in what is checked (tests/attacks/attacks.toml,
the policy_by_* cases, grade the whole path)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from grader.engine import build_flags, symbols

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
    assert got is not None and "-O3" in got and "-O1" not in got
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


def macros(command: list[str], nvcc: bool) -> list[str]:
    done = subprocess.run(
        [*command, "-E", "-Xcompiler=-dM" if nvcc else "-dM"],
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(done.stdout.splitlines())


def as_macro_dump(check: list[str]) -> list[str]:
    """The check's compile command, turned into one that prints its macros."""
    assert check[-4] == "-c" and check[-2] == "-o"
    return [*check[:-4], check[-3]]


@pytest.mark.parametrize("level", ["-O3", "-O0"])
def test_the_check_sees_the_builds_macros_host(tmp_path, level):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ on this machine")
    source = tmp_path / "cpu_sum.cpp"
    source.write_text("int f(int x) { return x; }\n")
    like = [gxx, "-DNDEBUG", "-std=c++17", level, "-pthread"]
    check = symbols.compile_command(source, tmp_path, [], False, symbols.Toolchain.find(), like)
    assert "-fno-inline" in check  # calls stay calls
    assert macros(as_macro_dump(check), False) == macros([*like, str(source)], False)


@pytest.mark.parametrize("level", ["-O3", "-O0"])
def test_the_check_sees_the_builds_macros_cuda(tmp_path, level):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    source = tmp_path / "reduce.cu"
    source.write_text("__global__ void k(int* x) { *x = 1; }\n")
    like = [nvcc, "-DNDEBUG", "--std=c++17", level, "-arch=sm_90", "-lineinfo"]
    check = symbols.compile_command(source, tmp_path, [], False, symbols.Toolchain.find(), like)
    assert "-keep" in check  # the PTX, for the device facts
    assert macros(as_macro_dump(check), True) == macros([*like, str(source)], True)
