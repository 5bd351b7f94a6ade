"""A skeleton's TODO states the goal and the traps, never the solution's code
(issue 13): no statement of a solution's fence appears in the comments of the
skeleton's same fence, in every lab."""

import re

import pytest

from grader.engine.policy import fences
from grader.infra.toolchain import REPO

# Lines too generic to give anything away (every kernel has them).
TRIVIAL = {"__syncthreads();", "}", "{", "returntotal;", "return;", "else{", "};"}


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def code_lines(body: str) -> list[str]:
    """The fence's statements: comments dropped, whitespace squashed."""
    out = []
    for line in body.splitlines():
        line = re.sub(r"//.*", "", line).strip()
        s = _squash(line)
        if len(s) >= 10 and s not in TRIVIAL:
            out.append(s)
    return out


def comment_text(body: str) -> str:
    return _squash(" ".join(m.group(1) for m in re.finditer(r"//(.*)", body)))


def fence_pairs():
    if not (REPO / "solutions").is_dir():
        return []
    pairs = []
    for lab_dir in sorted((REPO / "labs").iterdir()):
        if not lab_dir.is_dir():
            continue
        for path in sorted(lab_dir.glob("*.c*")):
            solution = REPO / "solutions" / lab_dir.name / path.name
            skel = {f.name: f.body for f in fences.extract(path.read_text())}
            for f in fences.extract(solution.read_text()):
                pairs.append(
                    pytest.param(
                        skel.get(f.name, ""), f.body, id=f"{lab_dir.name}/{path.name}:{f.name}"
                    )
                )
    return pairs


TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|==|!=|<=|>=|<<|>>|\+=|\*=|&&|\|\||[^\sA-Za-z0-9_]")
# Four tokens in a row ("blockDim . x /") are a piece of an expression: a TODO may
# share a few with the code (a name, a type), not a recipe's worth.
MOST_SHARED = 0.06


def grams(text: str, k: int = 4) -> set[tuple[str, ...]]:
    t = TOKEN.findall(text)
    return {tuple(t[i : i + k]) for i in range(len(t) - k + 1)}


def shared_share(skeleton: str, solution: str) -> float:
    code = grams(" ".join(re.sub(r"//.*", "", line) for line in solution.splitlines()))
    said = grams(" ".join(m.group(1) for m in re.finditer(r"//(.*)", skeleton)))
    return len(code & said) / max(1, len(code))


@pytest.mark.parametrize("skeleton, solution", fence_pairs())
def test_skeleton_todo_holds_no_solution_statement(skeleton, solution):
    said = comment_text(skeleton)
    copied = [line for line in code_lines(solution) if line in said]
    assert not copied, f"the skeleton's TODO spells the solution's code: {copied}"
    share = shared_share(skeleton, solution)
    assert share <= MOST_SHARED, (
        f"{share:.0%} of the solution's code (4-token runs) is spelled in the TODO: state "
        "the goal and the traps, and leave the statements to the handout's folded steps"
    )


def test_a_dictated_todo_is_caught_by_its_pieces():
    solution = (
        "  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
        "    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];\n"
        "    __syncthreads();\n  }\n"
    )
    dictated = (
        "  // TODO: for s = blockDim.x / 2 down to 1, if threadIdx.x < s add\n"
        "  // partial[threadIdx.x + s] onto partial[threadIdx.x]\n"
    )
    goal = (
        "  // TODO: leave the block's sum in block_sums[blockIdx.x], with the busy\n"
        "  // threads contiguous; every thread must reach every barrier.\n"
    )
    assert shared_share(dictated, solution) > MOST_SHARED
    assert shared_share(goal, solution) <= MOST_SHARED


def test_the_check_sees_a_copied_line():
    skeleton = "  // TODO: partial[tid] += partial[tid + s]; then sync\n  LAB_TODO();\n"
    solution = "  if (tid < s) partial[tid] += partial[tid + s];\n  __syncthreads();\n"
    assert "partial[tid]+=partial[tid+s];" in comment_text(skeleton)
    assert [x for x in code_lines(solution) if x in comment_text(skeleton)] == []
    # the whole statement must appear: here the skeleton names it exactly
    solution2 = "  partial[tid] += partial[tid + s];\n"
    assert [x for x in code_lines(solution2) if x in comment_text(skeleton)]
