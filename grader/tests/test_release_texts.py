"""No text a student receives states the graded code of a solution's fence.

The release texts: every handout (labs/*/README.md), answers sheet
(labs/*/ANSWERS.md), hints file (labs/*/hints.toml), deck (slides/*.md), the
student README (docs/student/README.md) and the comments of the skeletons
(labs/NN/*.cu, ...). Their code (code blocks, inline code spans, a comment's
code-like runs) is compared with every lab's fence statements
(grader/engine/policy/fence_statements.py): a later lab's text that spells out an
earlier lab's graded code gives that lab away too. Each hit names the file,
the fragment and the lab."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.policy import fence_statements as fs
from grader.infra.toolchain import REPO

SOLUTIONS = REPO / "solutions"
LAB_IDS = [lab.id for lab in labmeta.load().labs]


def release_texts() -> list[Path]:
    labs = REPO / "labs"
    found = [
        *labs.glob("*/README.md"),
        *labs.glob("*/ANSWERS.md"),
        *labs.glob("*/hints.toml"),
        *(REPO / "slides").glob("*.md"),
        REPO / "docs" / "student" / "README.md",
        *(p for p in labs.glob("*/*") if p.suffix in fs.SOURCE_SUFFIXES),
    ]
    return sorted(p for p in found if p.is_file())


def fragments_of(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix in fs.SOURCE_SUFFIXES:
        return fs.comment_fragments(text)
    if path.name == "hints.toml":
        try:
            hints = tomllib.loads(text).get("hint", [])
            text = "\n\n".join(str(h.get("text", "")) for h in hints if isinstance(h, dict))
        except tomllib.TOMLDecodeError:
            pass  # test_hints says why; the raw text is checked meanwhile
    return fs.markdown_fragments(text)


@pytest.fixture(scope="module")
def statements() -> dict[str, set[str]]:
    if not SOLUTIONS.is_dir():
        pytest.skip("no solutions/ here (a student release)")
    return {lab: fs.solution_statements(lab, SOLUTIONS) for lab in LAB_IDS}


def leaks_in(path: Path, statements: dict[str, set[str]]) -> list[fs.Leak]:
    return fs.leaks(str(path.relative_to(REPO)), fragments_of(path), statements)


@pytest.mark.parametrize("path", release_texts(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_release_text_states_a_solution_fence(path, statements):
    found = leaks_in(path, statements)
    for leak in found:
        print(leak)
    assert not found, (
        f"{len(found)} fragment(s) of graded code in {path.relative_to(REPO)} "
        "(ask in words; the code lives in solutions/NN/walkthrough.md):\n"
        + "\n".join(f"  {leak}" for leak in found)
    )


# -- the comparison itself ---------------------------------------------------------

FENCE = """\
// ---- your code here (k) ----
  unsigned index = 2 * s * tid;
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  partial[tid] = i < n ? in[i] : 0;
  __syncthreads();
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), stream));
// ---- end ----
"""


@pytest.fixture
def stated() -> dict[str, set[str]]:
    return {"99_example": fs.statements_of(FENCE)}


@pytest.mark.parametrize(
    "fragment",
    [
        "index = 2*s*t",  # a part of a statement, spaced otherwise
        "unsigned   index=2*s*tid;",  # the statement itself
        "i < n ? in[i] : 0",
        "cudaMemsetAsync(out, 0, sizeof(int), stream)",
        "if (x) { unsigned index = 2 * s * tid; }",  # a line holding a statement
    ],
)
def test_a_fragment_of_a_statement_is_a_leak(fragment, stated):
    assert fs.leaks("t.md", [fragment], stated), fragment


@pytest.mark.parametrize(
    "fragment",
    [
        "std::size_t",
        "threadIdx.x",
        "__syncthreads();",
        "2*s",
        "partial[tid]",  # a name the contract may give
        "threadIdx.x < s",  # one comparison
        "tid % (2*s) == 0",  # not in this fence
    ],
)
def test_a_name_or_a_short_or_foreign_fragment_is_not(fragment, stated):
    assert not fs.leaks("t.md", [fragment], stated), fragment


def test_markdown_code_blocks_and_spans_are_compared(stated):
    text = (
        "Add `partial[tid] = i < n ? in[i] : 0` here.\n\n```cpp\n"
        "  unsigned index = 2 * s * tid;\n```\n"
        "Then `std::size_t` and\n`cudaMemsetAsync(out, 0,\nsizeof(int), stream)`.\n"
    )
    got = {leak.fragment.strip() for leak in fs.leaks("t.md", fs.markdown_fragments(text), stated)}
    assert got == {
        "partial[tid] = i < n ? in[i] : 0",
        "unsigned index = 2 * s * tid;",
        "cudaMemsetAsync(out, 0,\nsizeof(int), stream)",
    }


def test_skeleton_comments_are_compared_but_not_its_code(stated):
    source = (
        "// The old way: with index = 2*s*tid the threads collide.\n"
        "/* load `i < n ? in[i] : 0` */\n"
        'const char* s = "// unsigned index = 2 * s * tid;";\n'
        "unsigned index = 2 * s * tid;  // the harness may hold code like the fence's\n"
    )
    got = {leak.fragment.strip() for leak in fs.leaks("k.cu", fs.comment_fragments(source), stated)}
    assert got == {"index = 2*s*tid", "i < n ? in[i] : 0"}


def test_the_check_names_file_fragment_and_lab(stated):
    (leak,) = fs.leaks("labs/x/README.md", ["index = 2*s*t"], stated)
    assert str(leak).startswith(
        "labs/x/README.md: `index = 2*s*t` states the graded code of lab 99_example ("
    )
