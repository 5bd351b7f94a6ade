"""Policy checks on fenced code; what a student release leaves out."""

import subprocess

import pytest

from grader import labmeta
from grader.commands import release
from grader.engine.policy import policy
from grader.infra.toolchain import REPO

LAB04 = labmeta.load().lab("04")


def lab_copy(tmp_path, fence_body):
    d = tmp_path / "04"
    d.mkdir()
    text = (REPO / "labs" / LAB04.id / "reduce.cu").read_text()
    (d / "reduce.cu").write_text(text.replace("  LAB_TODO();\n", fence_body))
    return d


def test_forbidden_api_inside_a_fence_fails_with_the_reason(tmp_path):
    found = policy.check(LAB04, lab_copy(tmp_path, "  cub::BlockReduce<int, 256> r;\n"))
    assert [v.found for v in found] == ["cub::"] and "not allowed" in found[0].why


def test_comments_and_harness_do_not_count(tmp_path):
    assert policy.check(LAB04, lab_copy(tmp_path, "  // unlike cub::DeviceReduce\n")) == []
    assert policy.check(LAB04, REPO / "labs" / LAB04.id) == []


def test_missing_file_is_a_violation(tmp_path):
    assert policy.check(LAB04, tmp_path)[0].why == "the file is missing"


@pytest.mark.skipif(
    not (REPO / ".git").exists(), reason="a release is made from git, and this copy has no .git"
)
def test_release_leaves_out_solutions_and_hidden_tests(tmp_path):
    dest = tmp_path / "release"
    release.make(dest)
    assert release.stray(dest) == []  # LEFT_OUT, but the evidence released code reads
    assert not (dest / "solutions").exists() and not (dest / "docs").exists()
    assert (dest / "labs" / "04_sequential_addressing" / "reduce.cu").exists()
    committed = subprocess.run(
        ["git", "-C", str(REPO), "show", "HEAD:grader/labs.toml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (dest / "grader" / "labs.toml").read_text() == committed
    assert not any(p.name.startswith("build") for p in dest.iterdir())
