"""What a failure most likely means, in words a student can act on.

The tests name a hint per failing case (test property fail_hint); the grader
adds hints that only show across cases (fails only for some sizes, ...)."""

from __future__ import annotations

from ..results import CaseResult
from ..status import CaseStatus

# Why the checker stopped asking (tests/support/runner_link.hpp's budgets).
STOPPED_ASKING = "the lab's code hung, crashed or lost its CUDA context too often before"

CASE_HINTS = {
    "not_implemented": "not implemented: the fenced region still holds the skeleton's TODO",
    "never_written": "nothing wrote the output: thread 0 of each block must store the block's "
    "result, and the last pass must write *out",
    "read_past_end": "a thread read past the end of the input: check the bounds (i < n) "
    "where elements are loaded",
    "read_before_start": "a thread read before the start of the input: a negative or wrapped index",
    "not_reset": "right once, wrong on the second call: reset the output inside the call",
    "differs_between_calls": "different results for the same input: a race, most often a "
    "missing __syncthreads() between steps of the tree",
    "shared_state": "two calls at once on two streams interfered: keep all state in the "
    "caller's output and workspace, and queue everything on the caller's stream",
    "inaccurate": "further from the exact sum than the method allows: check the compensation "
    "(Kahan) or that the accumulation stays in double until the end",
    "input_modified": "the input was modified: the contract leaves it unchanged",
    "cuda_error": "a CUDA error: a bad launch configuration or an illegal memory access",
    "wrong_value": "wrong result",
    "wrong_identity": "wrong on all-negative input: the identity of max is -inf, not 0 or RAND_MIN",
    "crashed": "the lab's program crashed during this test (a segmentation fault, an abort, "
    "an exit): the checker started a fresh one for the next test",
    "exception": "the lab's code threw an exception",
    "output_limit": "the lab's code printed too much and was stopped",
    "runner_error": "the lab's program did not answer as the contract says",
    CaseStatus.NOT_RUN: f"this test did not run ({STOPPED_ASKING} it)",
    "workspace_not_ready": "right once, then wrong on the same input: the workspace is kept "
    "between calls, and the last block must put back to zero what it "
    "counted there",
    "stale_result": "a timed call returned an old answer: every call must compute its result, "
    "not remember one",
    "checker_error": "the checker itself failed: a fault of the grading machine, not of your code",
    CaseStatus.TIMED_OUT: "the test did not finish in time: a kernel that never ends (a "
    "__syncthreads() inside a branch some threads skip, or a loop that never "
    "exits)",
}

# A warp intrinsic called with a constant mask of fewer than 32 lanes (fence_masks.py).
PARTIAL_MASK = (
    "the mask must name every lane that executes the call; with fewer lanes the result is "
    "undefined even when it works on your GPU (when the whole warp calls it, the mask is "
    "0xffffffff)"
)

INT32_LIMIT = 2**31


def _n(case: CaseResult, key: str) -> int | None:
    try:
        return int(case.properties[key])
    except (KeyError, ValueError):
        return None


def explain(failure, case: CaseResult) -> str:
    """The test's own explanation of this failure (the line `hint [name]: ...` of
    its message), else the general text for its hint name."""
    for message in case.failures:
        for line in message.splitlines():
            line = line.strip()
            if line.startswith("hint [") and "]: " in line:
                return line.split("]: ", 1)[1]
    return CASE_HINTS.get(failure.hint, failure.hint or "wrong result")


# The handout section behind each kind of hint (every handout has these three).
SECTIONS = {"not_implemented": "What you need to do", "performance": "Bandwidth threshold"}
DEFAULT_SECTION = "Grading"


def where_explained(lab_id: str, hint: str) -> str:
    """The handout section that explains a hint: a path and a GitHub-style anchor."""
    section = SECTIONS.get(hint, DEFAULT_SECTION)
    anchor = section.lower().replace(" ", "-")
    return f'labs/{lab_id}/README.md#{anchor} ("{section}")'


def case_hint(case: CaseResult) -> str:
    code = case.properties.get("fail_hint") or (case.status if case.status in CASE_HINTS else "")
    return code


def not_run(case: CaseResult) -> bool:
    """Did the test not run at all? The checker stops asking after a few
    hangs, crashes or lost CUDA contexts (tests/support/runner_link.hpp) and
    fails its later tests with hint not_run; a run that ended early leaves
    tests without a result (CaseStatus.NOT_RUN, checker_run.py). Such a test
    says nothing about the lab's code: the failure before it says why."""
    return case_hint(case) == CaseStatus.NOT_RUN


def cross_case_hints(cases: list[CaseResult]) -> list[str]:
    """Hints that need several cases: which sizes fail and which pass."""
    skipped = sum(map(not_run, cases))
    if skipped:
        # Which sizes fail "only" is unknown while some never ran.
        return [
            f"{skipped} test(s) did not run: {STOPPED_ASKING} them; "
            "mend the first failure and they will run"
        ]
    failed = [c for c in cases if not c.ok]
    passed = [c for c in cases if c.status == CaseStatus.PASSED]
    failed_n = [n for c in failed if (n := _n(c, "fail_n") or _n(c, "n")) is not None]
    passed_n = [n for c in passed if (n := _n(c, "n")) is not None]
    hints: list[str] = []
    if not failed_n:
        return hints
    if all(n > INT32_LIMIT for n in failed_n) and passed_n:
        hints.append(
            "wrong only above 2^31 elements: an index held in 32 bits (int or "
            "unsigned) overflows; compute indices in std::size_t"
        )
    elif (
        all(n % 32 != 0 for n in failed_n)
        and any(n % 256 == 0 for n in passed_n)
        and len(failed_n) > 1
    ):
        hints.append(
            "fails only when n is not a multiple of the block size: check the "
            "bounds of the loads and of the last, partly filled block"
        )
    inputs = {c.properties.get("fail_input") for c in failed}
    if inputs and inputs <= {"all_negative", "negative"}:
        hints.append(CASE_HINTS["wrong_identity"])
    return hints
