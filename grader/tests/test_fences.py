"""Fenced regions: extraction, what lies outside them, transplanting."""

import pytest
from conftest import FIXTURES  # noqa: F401

from grader.engine.policy import fence_lexer, fences
from grader.infra.toolchain import REPO

HARNESS = """int f() {
  // ---- your code here (f) ----
  // TODO
  LAB_TODO_HOST("f");
  // ---- end ----
}
"""
STUDENT = HARNESS.replace('  // TODO\n  LAB_TODO_HOST("f");\n', "  return 42;\n")


def test_extract_names_and_bodies():
    (f,) = fences.extract(STUDENT)
    assert f.name == "f" and f.body == "  return 42;\n" and f.first_line == 3


def test_outside_ignores_the_fence_bodies():
    assert fences.outside(HARNESS) == fences.outside(STUDENT)


def test_transplant_puts_the_student_code_into_the_harness():
    tampered = STUDENT.replace("int f()", "int f() /* changed */")
    assert fences.transplant(tampered, HARNESS) == STUDENT


def test_unclosed_fence_is_an_error():
    with pytest.raises(fences.FenceError):
        fences.extract("// ---- your code here (x) ----\nint a;\n")


def test_skeleton_and_solution_differ_only_inside_fences():
    if not (REPO / "solutions").is_dir():
        pytest.skip("no solutions/ here (a student release)")
    for lab_dir in sorted((REPO / "labs").iterdir()):
        for path in lab_dir.glob("*.c*"):
            solution = REPO / "solutions" / lab_dir.name / path.name
            assert solution.exists(), f"{solution} is missing"
            skeleton_fences = [f.name for f in fences.extract(path.read_text())]
            assert skeleton_fences, f"{path} has no fenced region"
            assert skeleton_fences == [f.name for f in fences.extract(solution.read_text())]
            assert fences.outside(path.read_text()) == fences.outside(solution.read_text()), (
                f"{path} and its solution differ outside the fences"
            )


# ---------------------------------------------------------------- a fence is a block


def problems(body: str) -> list[str]:
    return fences.validate(body)


HONEST = [
    "  int total = 0;\n  for (std::size_t i = 0; i < n; ++i) total += in[i];\n  return total;\n",
    # brackets in strings, characters, raw strings and comments are not brackets
    "  const char* s = \"} int evil() {\"; char c = '}';  // }\n  /* { */\n",
    '  auto r = R"x(} ) ]")x"; auto u = u8"{"; auto w = L\'(\';\n',
    "#pragma unroll\n  for (int k = 0; k < 4; ++k) s += v[k];\n#pragma unroll 4\n"
    "  for (int k = 0; k < 4; ++k) s += v[k];\n",
    "  # pragma unroll 8  // a comment after it\n  for (;;) {}\n",
    '  asm volatile("ld.global.nc.v4.s32 {%0, %1, %2, %3}, [%4];"\n'
    '               : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p));\n',
    '  asm volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");\n',
    "  const int big = 1'000'000; auto x = static_cast<::std::size_t>(big);\n",
    "  kernel<<<blocks, threads>>>(in, n); int a<:2:> = <%1, 2%>;\n",
    "",
    # a warp intrinsic's mask: all 32 lanes, however written, or one computed at run time
    "  v += __shfl_down_sync(0xffffffff, v, 16) + __shfl_xor_sync(0xFFFF'FFFFu, v, 1);\n"
    "  b = __ballot_sync(~0u, v > 0) | __any_sync(-1, v) | __all_sync((unsigned)-1, v);\n"
    "  b += __reduce_add_sync(static_cast<unsigned>(~0), v);\n",
    "  constexpr unsigned kAll = 0xffffffffu;\n  v += __shfl_up_sync(kAll, v, 1);\n",
    "  const unsigned m = __ballot_sync(0xffffffff, lane < 8);\n"
    "  if (lane < 8) v += __shfl_down_sync(m, v, 4);\n  __syncwarp();\n",
    "  v += __shfl_sync(__activemask(), v, 0) + __shfl_down_sync(kFullMask, v, 8);\n",
]


@pytest.mark.parametrize("body", HONEST)
def test_an_honest_fence_passes(body):
    assert problems(body) == []


HOSTILE = {
    "break_out": ("  return 1;\n} int evil() {\n  return 2;\n", "closes a bracket opened before"),
    "break_out_digraph": ("  %> int evil() <%\n", "closes a bracket opened before"),
    "break_out_trigraph": ("  ??> int evil() ??<\n", "closes a bracket opened before"),
    "unclosed": ("  if (n) {\n", "never closed"),
    "mismatched": ("  f(a];\n", "does not match"),
    "include": ("#include </etc/passwd>\n", "'#include'"),
    "include_after_a_continuation": ("  int x = 0;\n#\\\ninclude <cstdio>\n", "'#include'"),
    "include_in_a_pragma_line": ('#pragma unroll \\\n4 _Pragma("x")\n', "_Pragma"),
    "digraph_include": ("%:include <cstdio>\n", "'#include'"),
    "trigraph_include": ("??=include <cstdio>\n", "'#include'"),
    "define": ("  /* a comment first */ #define return exit(0);\n", "'#define'"),
    "endif": ("#endif\n", "'#endif'"),
    "other_pragma": ('#pragma GCC optimize("O0")\n', "'#pragma GCC'"),
    "pragma_unroll_with_more": ("#pragma unroll 4 int x;\n", "alone on its line"),
    "stray_hash": ("  int x = 0; # define A\n", "'#' is not allowed here"),
    "pragma_operator": ('  _Pragma("GCC poison total")\n', "'_Pragma'"),
    "asm_init_array": (
        '  asm(".pushsection .init_array,\\"aw\\"\\n.quad evil\\n.popsection");\n',
        "'.pushsection'",
    ),
    "asm_incbin": (
        '  asm(".incbin \\"/course/solutions/01_cpu_baseline/cpu_sum.cpp\\"");\n',
        "'.incbin'",
    ),
    "asm_escaped": ('  __asm__ __volatile__("\\x2esection .init_array");\n', "'.section'"),
    "asm_split": ('  asm(".sec" "tion .ctors");\n', "'.section'"),
    "asm_raw": ('  asm(R"(.include "/etc/passwd")");\n', "'.include'"),
    "asm_global_symbol": ('  asm(".globl main");\n', "'.globl'"),
    "asm_not_a_literal": ("  asm((directive));\n", "must be a string literal"),
    "attribute_section": (
        '  static void (*run)() __attribute__((section(".init_array"))) = f;\n',
        "'section'",
    ),
    "attribute_section_cxx11": (
        '  [[gnu::section(".init_array")]] static int x = 0;\n',
        "'section'",
    ),
    "open_comment": ("  int x = 0; /* swallow the rest\n", "never closed"),
    "open_string": ('  const char* s = "abc;\n', "not closed on its line"),
    "open_raw_string": ('  auto s = R"x(\n  }\n', "raw string"),
    "trailing_continuation": ("  int x = 0; \\\n", "ends with '\\'"),
    "backslash_space_newline": ("  // a comment \\  \n  }\n", "closes a bracket"),
    "lone_carriage_return": ("  // a comment\r} int evil() {\n", "closes a bracket"),
    "odd_line_break": ("  int x = 0;\x1c\n", "U+001C"),
    "no_final_newline": ("  int x = 0;", "does not end with a line break"),
    # A constant mask of fewer lanes than call it: undefined, even where it gives the sum.
    "half_mask_shuffle": (
        "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffff, v, o);\n",
        "'__shfl_down_sync' is called with the mask 0xffff",
    ),
    "half_mask_cast": ("  v += __shfl_xor_sync(unsigned(0x0000ffffu), v, 1);\n", "0xffff"),
    "half_mask_expression": ("  v += __shfl_up_sync((1u << 16) - 1, v, 1);\n", "0xffff"),
    "half_mask_constant": (
        "  constexpr unsigned kHalf = 0xffff;\n  v += __shfl_sync(kHalf, v, 0);\n",
        "'__shfl_sync' is called with the mask 0xffff",
    ),
    "partial_ballot": ("  b = __ballot_sync(0x7fffffff, v > 0);\n", "0x7fffffff"),
    "partial_vote": ("  b = __any_sync(1, v) + __all_sync(0xff, v);\n", "'__any_sync'"),
    "partial_match": ("  b = __match_any_sync(0xf0f0f0f0, v);\n", "0xf0f0f0f0"),
    "partial_reduce": ("  b = __reduce_max_sync(0xffff, v);\n", "'__reduce_max_sync'"),
    "partial_syncwarp": ("  __syncwarp(0xffff);\n", "'__syncwarp'"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_fence_fails(name):
    body, expected = HOSTILE[name]
    found = problems(body)
    assert any(expected in p for p in found), found


def test_problems_name_the_line_in_the_file():
    (p,) = fences.validate("  int a;\n  int b;\n} int evil() {\n", first_line=40)
    assert p.startswith("line 42: ")
    (f,) = fences.extract(HARNESS.replace("  // TODO\n", "  }\n  int g() {\n"))
    assert f.problems and f.problems[0].startswith("line 3: ")


def test_a_fence_named_twice_is_an_error():
    twice = STUDENT + STUDENT.replace("int f()", "int g()")
    with pytest.raises(fences.FenceError, match="appears twice"):
        fences.extract(twice)
    with pytest.raises(fences.FenceError, match="appears twice"):
        fences.transplant_checked(twice, HARNESS)  # in the submission
    with pytest.raises(fences.FenceError, match="appears twice"):
        fences.transplant_checked(STUDENT, HARNESS + HARNESS)  # in the harness


def test_transplant_keeps_the_skeleton_where_a_fence_fails():
    evil = HARNESS.replace('  // TODO\n  LAB_TODO_HOST("f");\n', "  return 1;\n} int evil() {\n")
    text, notes = fences.transplant_checked(evil, HARNESS, "lab/f.cpp")
    assert text == HARNESS
    assert len(notes) == 1 and "fence f" in notes[0] and "lab/f.cpp" in notes[0]
    assert "line 4: '}' closes a bracket" in notes[0]
    assert fences.transplant(evil, HARNESS) == HARNESS  # the old API is as strict


def test_transplant_pastes_a_valid_fence_with_no_notes():
    assert fences.transplant_checked(STUDENT, HARNESS) == (STUDENT, [])


def test_every_instructor_fence_passes():
    checked = 0
    for folder in ("labs", "solutions"):
        for path in sorted((REPO / folder).glob("*/*")):
            if not path.is_file():
                continue
            for fence in fences.extract(path.read_text(), str(path)):
                assert fence.problems == (), f"{path}: fence {fence.name}: {fence.problems}"
                assert fences.validate(fence.body, fence.first_line) == []
                checked += 1
    assert checked >= 20


def test_a_huge_hostile_fence_is_refused_quickly():
    import time

    started = time.monotonic()
    found = problems("{" * (1 << 20) + "\n")
    assert time.monotonic() - started < 10
    assert any(f"longer than {fence_lexer.MAX_TOKENS} tokens" in p for p in found), found


def test_a_half_mask_in_lab_09s_warp_reduce_is_refused_with_why():
    """All 32 lanes call the shuffle but its mask names 16: the sum comes out
    right on an H200 (undefined behaviour that happens to work), so no test
    can be trusted to fail it; the fence is refused, saying why."""
    if not (REPO / "solutions").is_dir():
        pytest.skip("no solutions/ here (a student release)")
    lab = next(p for p in (REPO / "solutions").iterdir() if p.name.startswith("09_"))
    solution = (lab / "reduce.cu").read_text()
    skeleton = (REPO / "labs" / lab.name / "reduce.cu").read_text()
    full = "__shfl_down_sync(kFullMask, v, offset)"
    assert solution.count(full) == 1
    assert fences.transplant_checked(solution, skeleton) == (solution, [])
    half = solution.replace(full, "__shfl_down_sync(0xffff, v, offset)")
    text, notes = fences.transplant_checked(half, skeleton, "09/reduce.cu")
    (warp_reduce,) = [f for f in fences.extract(skeleton) if f.name == "warp_reduce"]
    assert warp_reduce.body in text and "(0xffff," not in text
    assert len(notes) == 1 and "fence warp_reduce was not used" in notes[0]
    assert "the mask must name every lane that executes the call" in notes[0]
