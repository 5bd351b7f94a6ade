"""A GPU lab's file is compiled once: tests/meson.build gives the labs/
runners of GPU labs the linked policy check's additions (host code that
calls out instead of inlining, line tables, the PTX kept), and the check
reads what that compile made (build_flags.kept_by_build,
build_facts.kept_facts) instead of compiling the file again. Its facts must
be the facts the check's own compile finds, and its baselines (the skeleton,
the reference) are compiled as before, with their own folder of kept files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.policy import build_facts, build_flags, policy, symbol_parse, symbols
from grader.infra import proc, toolchain

REPO = toolchain.REPO
TOOLS = symbols.Toolchain.find()
BUILD = ["nvcc", "-DNDEBUG", "--std=c++17", "-O3", "-arch=sm_90", "-lineinfo"]


def carrying(keep: Path, command: list[str] = BUILD) -> list[str]:
    """command as tests/meson.build gives it to a GPU lab's runner of labs/."""
    added = ["-Xcompiler=-fno-inline,-g1", "-keep", "-keep-dir", str(keep)]
    return command + added + (["-U__NO_INLINE__"] if build_flags.optimised(command) else [])


def test_a_compile_that_carries_every_addition_is_read_where_it_keeps_its_ptx(tmp_path):
    assert build_flags.kept_by_build(carrying(tmp_path)) == tmp_path
    assert build_flags.kept_by_build(BUILD) is None
    no_inline = [a for a in carrying(tmp_path) if not a.startswith("-Xcompiler=-fno-inline")]
    assert build_flags.kept_by_build(no_inline) is None  # calls could be inlined away: compile
    assert build_flags.kept_by_build(carrying(Path("relative"))) is None
    unoptimised = [a.replace("-O3", "-O0") for a in BUILD]
    assert build_flags.kept_by_build(carrying(tmp_path, unoptimised)) == tmp_path


def test_only_the_ptx_this_configuration_writes_is_read():
    """meson.build's spellings of the architectures (gpu_arch): a file of an
    earlier configuration left in the build's folder is not read."""
    gencode = "-gencode=arch=compute_{0},code=sm_{0}"
    portable = [gencode.format(a) for a in ("75", "80", "86", "89", "90")]
    portable.append("-gencode=arch=compute_90,code=compute_90")
    assert build_flags.ptx_names(["nvcc", "-arch=sm_90"], "r") == ["r.ptx"]
    assert build_flags.ptx_names(["nvcc", "-arch=native"], "r") == ["r.ptx"]
    assert build_flags.ptx_names(["nvcc", "-gencode=arch=compute_75,code=compute_75"], "r") == [
        "r.ptx"
    ]
    assert build_flags.ptx_names(["nvcc", *portable], "r") == [
        f"r.compute_{a}.ptx" for a in ("75", "80", "86", "89", "90")
    ]
    assert build_flags.ptx_names(["nvcc", "-gencode", "arch=compute_75,code=sm_75"], "r") == [
        "r.ptx"
    ]
    for unread in (["nvcc"], ["nvcc", "-arch=all"], ["nvcc", "-gencode=code=sm_90"]):
        assert build_flags.ptx_names(unread, "r") is None
        assert build_flags.kept_by_build(carrying(Path("/k"), unread)) is None  # compiled again


def test_the_checks_own_compile_adds_the_additions_once_with_its_own_folder(tmp_path):
    """A baseline (the skeleton, the reference) compiled with such a command
    keeps its files in its own folder, not in the build's."""
    mine = tmp_path / "check"
    got = build_flags.check_command(carrying(tmp_path / "build"), Path("r.cu"), mine)
    assert got.count("-keep") == got.count("-keep-dir") == got.count("-U__NO_INLINE__") == 1
    assert got[got.index("-keep-dir") + 1] == str(mine)
    assert got == build_flags.check_command(BUILD, Path("r.cu"), mine)
    like = build_flags.BuildCompile(carrying(tmp_path / "w1"), tmp_path, "r.cu")
    plain = build_flags.BuildCompile(BUILD, tmp_path, "r.cu")
    assert build_flags.key_part(like) == build_flags.key_part(plain)  # one cache for both


def test_meson_gives_gpu_runners_the_additions_the_check_reads():
    """tests/meson.build's list and build_flags.ADDITIONS must not drift apart:
    a build that lacks one is compiled again by the check (correct, slower);
    one kept_by_build accepted with an addition missing would be read as the
    check's compile when it is not."""
    text = (REPO / "tests" / "meson.build").read_text()
    block = text[text.index("check_args = ['") : text.index("runner = executable(")]
    needed = [a for a in build_flags.ADDITIONS[".cu"] if a != "{out}"]
    for arg in needed:
        assert f"'{arg}'" in block, arg
    assert re.search(r"'-keep-dir',\s*meson\.current_build_dir\(\)", block)


@pytest.mark.skipif(
    TOOLS.nvcc is None or TOOLS.objdump is None or TOOLS.cxxfilt is None,
    reason="nvcc (the CUDA toolkit), objdump or c++filt is not installed",
)
@pytest.mark.parametrize("lab_id", ["07", "10"])
def test_what_the_build_made_has_the_facts_the_checks_compile_finds(tmp_path, lab_id):
    lab = labmeta.load().lab(lab_id)
    name = lab.files[0]
    work, keep = tmp_path / "work", tmp_path / "build" / "r.p"
    keep.mkdir(parents=True)
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / name
    source.write_text((REPO / "solutions" / lab.id / name).read_text())
    command = carrying(keep) + (["-rdc=true"] if lab.rdc else []) + [f"-I{REPO / 'common'}"]
    like = build_flags.BuildCompile(command, tmp_path / "build", f"../src/{name}", "r.p/x.o")
    built = proc.run(
        [*command, "-c", like.file, "-o", like.output],
        timeout=300,
        cwd=like.directory,
        env=toolchain.compile_env(),
    )
    assert built.ok, built.output[-2000:]
    instructions = policy.instruction_patterns(policy.categories_for(lab))
    read = build_facts.kept_facts(
        like, keep, include_dirs=[REPO / "common"], instructions=instructions, timeout=120
    )
    compiled = symbols.compile_facts(
        source,
        include_dirs=[REPO / "common"],
        rdc=lab.rdc,
        work=work,
        timeout=300,
        instructions=instructions,
        like=like,
    )
    assert read.ok and read.complete and compiled.ok and compiled.complete
    assert read.facts and set(read.facts) == set(compiled.facts)
    kinds = {f.kind for f in read.facts}
    assert {symbol_parse.HOST_SYMBOL, symbol_parse.DEVICE_SYMBOL} <= kinds  # object and PTX


def test_what_the_build_made_that_cannot_be_read_is_a_fault_not_a_refusal(tmp_path):
    """The build compiled the file (it succeeded), so an object or PTX that is
    not there is not the student's doing: the check has no verdict and says
    it is a fault (lab_policy: the lab is not graded)."""
    lab = labmeta.load().lab("07")
    (tmp_path / "src").mkdir()
    student = tmp_path / "src" / lab.files[0]
    student.write_text((REPO / "solutions" / lab.id / lab.files[0]).read_text())
    keep = tmp_path / "build" / "r.p"
    keep.mkdir(parents=True)
    (keep / "x.o").write_bytes(b"")  # an object, and no PTX beside it
    like = build_flags.BuildCompile(
        carrying(keep), tmp_path / "build", "../src/reduce.cu", "r.p/x.o"
    )
    checked = policy.check_linked(
        lab,
        student,
        skeleton_file=REPO / "labs" / lab.id / lab.files[0],
        reference_file=None,
        include_dirs=[REPO / "common"],
        work=tmp_path / "work",
        like=like,
    )
    assert not checked.judged and "the build kept no PTX" in checked.fault, checked
