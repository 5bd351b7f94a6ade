"""The linked policy check reads what this repository's own meson build made
of a GPU lab's file (build_flags.kept_by_build): the real compile_commands.json
of a configured tree, whatever architecture it was configured for (CI's
`check`: PTX for compute_75 only). meson runs it as `grader-kept`, after
building the labs/ runners of labs 07 and 10, with LAB_BUILD_DIR naming the
build folder; elsewhere it skips."""

import os
from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.policy import build_flags
from grader.engine import lab_grading
from grader.engine.policy import lab_policy
from grader.infra.toolchain import REPO
from grader.tests.test_build_kept import TOOLS

BUILD = Path(os.environ.get("LAB_BUILD_DIR", "/nonexistent"))

pytestmark = [
    pytest.mark.skipif(
        not (BUILD / "compile_commands.json").is_file(),
        reason="no configured build folder (meson test grader-kept sets LAB_BUILD_DIR)",
    ),
    pytest.mark.skipif(TOOLS.objdump is None, reason="objdump is not installed"),
]


@pytest.mark.parametrize("lab_id", ["07", "10"])
def test_the_check_reads_the_builds_own_output_of_a_gpu_lab(tmp_path, lab_id):
    lab = labmeta.load().lab(lab_id)
    target = lab_grading.runner_target(lab, "labs")
    like = build_flags.for_file(BUILD, target, lab.files[0])
    assert like is not None and like.kept is not None, like
    assert like.object.is_file(), f"meson test builds {target} first"
    assert lab_policy.reads_build(lab, BUILD, target)
    # The skeleton against itself and the reference: judged, and clean.
    lab_dir = REPO / "labs" / lab.id
    found = lab_policy.linked_violations(lab, lab_dir, REPO, tmp_path, BUILD, target)
    assert found == [], found
    assert lab_policy.built_violations(lab, lab_dir, REPO, tmp_path, BUILD, target, []) == []


def test_lab_01_is_compiled_again():
    lab = labmeta.load().lab("01")
    like = build_flags.for_file(BUILD, lab_grading.runner_target(lab, "labs"), lab.files[0])
    assert like is not None and like.kept is None
