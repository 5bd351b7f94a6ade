"""The linked policy check (grader/engine/policy/policy.py check_linked, grader/engine/policy/symbols.py):
what a compiled lab file calls, not how the call is spelled.

Student files are what the batch grader compiles: the reference solution with
one fence body replaced. The body is pasted as it is, without the fence
checker of grader/engine/policy/fences.py: where C++ allows a trick only outside a function
body (an #include), the body closes the function and opens another, as a
student could. Stopping that is the fence checker's job; this check must
catch the call even when a break-out gets past it."""

import sys
import time
from pathlib import Path

import pytest

from grader import labmeta
from grader.engine.policy import facts_cache, fences, policy, symbol_names, symbols
from grader.infra.toolchain import REPO

COURSE = labmeta.load()
TOOLS = symbols.Toolchain.find()
COMMON = REPO / "common"

needs_gxx = pytest.mark.skipif(
    TOOLS.gxx is None or TOOLS.objdump is None or TOOLS.cxxfilt is None,
    reason="g++, objdump or c++filt is not installed",
)
needs_nvcc = pytest.mark.skipif(
    TOOLS.nvcc is None or TOOLS.objdump is None or TOOLS.cxxfilt is None,
    reason="nvcc (the CUDA toolkit), objdump or c++filt is not installed",
)


def needs_for(lab: labmeta.Lab):
    return needs_nvcc if lab.files[0].endswith(".cu") else needs_gxx


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """One work folder for the module, so the skeletons' and references' facts
    are compiled once, as in a batch."""
    return tmp_path_factory.mktemp("policy-work")


def with_fence(lab_id: str, fence: str, body: str) -> str:
    """The reference solution with the body of one fence replaced, verbatim."""
    lab = COURSE.lab(lab_id)
    reference = (REPO / "solutions" / lab.id / lab.files[0]).read_text()
    out, inside, pasted = [], False, False
    for line in reference.splitlines(keepends=True):
        if (m := fences.BEGIN.match(line)) is not None and m["name"] == fence:
            out += [line, body]
            inside = pasted = True
        elif inside and fences.END.match(line):
            out.append(line)
            inside = False
        elif not inside:
            out.append(line)
    assert pasted, f"no fence {fence} in lab {lab_id}"
    return "".join(out)


def linked(lab_id: str, text: str, tmp_path: Path, work: Path) -> policy.LinkedCheck:
    lab = COURSE.lab(lab_id)
    name = lab.files[0]
    (tmp_path / name).write_text(text)
    return policy.check_linked(
        lab,
        tmp_path / name,
        skeleton_file=REPO / "labs" / lab.id / name,
        reference_file=REPO / "solutions" / lab.id / name,
        include_dirs=[COMMON],
        work=work,
    )


def line_of(text: str, marker: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if marker in line)


def assert_caught(result: policy.LinkedCheck, found: str, why: str, line: int | None = None):
    assert result.compiled and result.judged, result.log
    hits = [v for v in result.violations if found in v.found]
    assert hits, f"{found!r} not among {result.violations}"
    assert any(why in v.why for v in hits), hits
    if line is not None:
        assert line in [v.line for v in hits], hits


# ---------------------------------------------------------------- instructor's files

LAB_FILES = [
    pytest.param(lab, which, marks=needs_for(lab), id=f"{lab.id}-{which}")
    for lab in COURSE.labs
    for which in ("labs", "solutions")
]


def instructors_facts(lab: labmeta.Lab, which: str, work: Path) -> symbols.Compiled:
    """As check_linked compiles them, so that its cache serves both."""
    return facts_cache.cached_facts(
        REPO / which / lab.id / lab.files[0],
        include_dirs=[COMMON],
        rdc=lab.rdc,
        work=work,
        timeout=300,
        instructions=policy.instruction_patterns(policy.categories_for(lab)),
    )


@pytest.mark.parametrize("lab,which", LAB_FILES)
def test_every_skeleton_and_reference_compiles_for_the_check(lab, which, work):
    compiled = instructors_facts(lab, which, work)
    assert compiled.ok, compiled.log[-3000:]


@pytest.mark.parametrize("lab,which", LAB_FILES)
def test_untouched_skeleton_and_reference_give_no_violation(lab, which, tmp_path, work):
    """Copied elsewhere first, as a student's file is: the names the compilers
    make up per file (anonymous namespaces, registration) must not count."""
    text = (REPO / which / lab.id / lab.files[0]).read_text()
    result = linked(lab.id, text, tmp_path, work)
    assert result.compiled and result.judged, result.log[-3000:]
    assert result.violations == []


@pytest.mark.parametrize("lab,which", LAB_FILES)
def test_instructors_files_reference_no_copy_api(lab, which, work):
    """lab_fence.cuh reads the LAB_TODO() flag through cudaGetSymbolAddress:
    no lab file needs a host copy (lab 07's cudaMemsetAsync is no copy)."""
    compiled = instructors_facts(lab, which, work)
    if not compiled.ok:
        pytest.skip(f"{which}/{lab.id} does not compile (the compile test says why)")
    copies = [f for f in compiled.facts if "Memcpy" in f.name or "cuMemcpy" in f.name]
    assert copies == []


# ---------------------------------------------------------------- evasions

# Lab 01 includes no <numeric>: std::accumulate needs a header, and a header
# cannot be included inside a function. So these bodies end the function,
# include it, and define the helper the fence calls.
NUMERIC_BREAKOUT = """\
  int lab_total(const int*, std::size_t);
  return lab_total(in, n);
}}

#include <numeric>
{alias}
int lab_total(const int* in, std::size_t n) {{
{code}
"""


@needs_gxx
def test_using_namespace_std_accumulate_is_caught(tmp_path, work):
    text = with_fence(
        "01",
        "sum_sequential",
        NUMERIC_BREAKOUT.format(
            alias="",
            code="  using namespace std;\n  return accumulate(in, in + n, 0);  // the call\n",
        ),
    )
    assert policy.check_strings(COURSE.lab("01"), write(tmp_path / "s", "cpu_sum.cpp", text)) == []
    assert_caught(
        linked("01", text, tmp_path, work),
        "std::accumulate",
        "Library reductions",
        line_of(text, "// the call"),
    )


@needs_gxx
def test_namespace_alias_accumulate_is_caught(tmp_path, work):
    text = with_fence(
        "01",
        "sum_sequential",
        NUMERIC_BREAKOUT.format(
            alias="namespace s = std;", code="  return s::accumulate(in, in + n, 0);  // the call\n"
        ),
    )
    assert policy.check_strings(COURSE.lab("01"), write(tmp_path / "s", "cpu_sum.cpp", text)) == []
    assert_caught(
        linked("01", text, tmp_path, work),
        "std::accumulate",
        "Library reductions",
        line_of(text, "// the call"),
    )


@needs_gxx
def test_std_reduce_is_caught(tmp_path, work):
    text = with_fence(
        "01",
        "sum_sequential",
        NUMERIC_BREAKOUT.format(alias="", code="  return std::reduce(in, in + n);  // the call\n"),
    )
    assert_caught(
        linked("01", text, tmp_path, work),
        "std::reduce",
        "Library reductions",
        line_of(text, "// the call"),
    )


# Lab 07's `reset` fence is host code inside reduce_sum, with the input at hand.
@needs_nvcc
def test_macro_pasted_cudamemcpy_is_caught(tmp_path, work):
    text = with_fence(
        "07",
        "reset",
        """\
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), stream));
#define LAB_GLUE(a, b) a##b
  int first = 0;
  LAB_GLUE(cudaMem, cpy)(&first, in, sizeof first, LAB_GLUE(cudaMem, cpyDefault));  // the call
""",
    )
    assert policy.check_strings(COURSE.lab("07"), write(tmp_path / "s", "reduce.cu", text)) == []
    assert_caught(
        linked("07", text, tmp_path, work),
        "cudaMemcpy",
        "Copying between host and device",
        line_of(text, "// the call"),
    )


@needs_nvcc
def test_function_pointer_to_cudamemcpy_is_caught(tmp_path, work):
    text = with_fence(
        "07",
        "reset",
        """\
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), stream));
  cudaError_t (*volatile copy)(void*, const void*, size_t, cudaMemcpyKind) = &cudaMemcpy;  // here
  int first = 0;
  copy(&first, in, sizeof first, cudaMemcpyDefault);
""",
    )
    assert_caught(
        linked("07", text, tmp_path, work),
        "cudaMemcpy",
        "Copying between host and device",
        line_of(text, "// here"),
    )


@needs_nvcc
def test_dlsym_is_caught(tmp_path, work):
    """<dlfcn.h> is not included, and extern "C" cannot appear in a block; a
    block-scope declaration with an asm label names the C symbol all the same."""
    text = with_fence(
        "07",
        "reset",
        """\
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), stream));
  void* lab_lookup(void*, const char*) __asm__("dlsym");
  using Copy = cudaError_t (*)(void*, const void*, size_t, int);
  const auto copy = reinterpret_cast<Copy>(lab_lookup(nullptr, "cuda" "Memcpy"));  // the call
  int first = 0;
  copy(&first, in, sizeof first, 4);
""",
    )
    assert policy.check_strings(COURSE.lab("07"), write(tmp_path / "s", "reduce.cu", text)) == []
    assert_caught(
        linked("07", text, tmp_path, work),
        "dlsym",
        "Loading libraries",
        line_of(text, "// the call"),
    )


@needs_nvcc
def test_managed_variable_is_caught(tmp_path, work):
    """__managed__ is for namespace scope only: the body ends reduce_sum, declares
    one, and carries the rest of reduce_sum into a function of its own."""
    text = with_fence(
        "07",
        "reset",
        """\
  void lab_rest(const int*, std::size_t, int*, cudaStream_t);
  lab_rest(in, n, out, stream);
}

__managed__ int lab_first;

void lab_rest(const int* in, std::size_t n, int* out, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), stream));
  lab_first = 0;  // a host access
""",
    )
    assert_caught(
        linked("07", text, tmp_path, work),
        "managed",
        "Host or managed memory",
        line_of(text, "// a host access"),
    )


@needs_nvcc
@pytest.mark.parametrize(
    "call",
    [
        "float* hog = nullptr; CUDA_CHECK(cudaMalloc(&hog, std::size_t{1} << 34));",
        "void* hog = nullptr; CUDA_CHECK(cudaMallocAsync(&hog, std::size_t{1} << 34, stream));",
        "CUDA_CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, std::size_t{1} << 34));",
    ],
    ids=["cudaMalloc-template", "cudaMallocAsync", "cudaDeviceSetLimit"],
)
def test_device_memory_of_its_own_is_caught(call, tmp_path, work):
    """Memory a lab takes is taken from the students beside it on the GPU
    (grader/engine/sharing/shared_gpu.py): the typed template reaches cudaMalloc too."""
    text = with_fence(
        "07",
        "reset",
        f"  {call}  // the call\n  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), stream));\n",
    )
    assert_caught(
        linked("07", text, tmp_path, work),
        call.split("CUDA_CHECK(")[1].split("(")[0],  # the API's name
        "Allocating GPU memory",
        line_of(text, "// the call"),
    )


@needs_gxx
def test_static_local_with_destructor_is_honest_cpp(tmp_path, work):
    # A std::vector kept between calls registers its destructor (__cxa_atexit):
    # honest C++, not flagged; what a destructor could forge, the checker never reads.
    text = with_fence(
        "01",
        "sum_sequential",
        """\
  static std::vector<int> seen;  // destroyed at exit
  seen.push_back(static_cast<int>(n));
  int total = 0;
  for (std::size_t i = 0; i < n; ++i) total += in[i];
  return total;
""",
    )
    assert linked("01", text, tmp_path, work).violations == []


@needs_gxx
def test_global_constructor_is_caught(tmp_path, work):
    text = with_fence(
        "01",
        "sum_sequential",
        """\
  int total = 0;
  for (std::size_t i = 0; i < n; ++i) total += in[i];
  return total;
}

static const int lab_early = std::thread::hardware_concurrency();  // runs before main

int lab_unused() {
  return lab_early;
""",
    )
    result = linked("01", text, tmp_path, work)
    assert_caught(result, "_GLOBAL__sub_I_", "before main or at exit")


@needs_gxx
def test_inline_asm_syscall_is_caught(tmp_path, work):
    text = with_fence(
        "01",
        "sum_sequential",
        """\
  long pid;
  asm volatile("syscall" : "=a"(pid) : "a"(39L) : "rcx", "r11", "memory");  // getpid
  int total = 0;
  for (std::size_t i = 0; i < n; ++i) total += in[i];
  return total;
""",
    )
    assert_caught(
        linked("01", text, tmp_path, work), "syscall", "system call", line_of(text, "// getpid")
    )


# CUB in lab 04's kernel fence. The body ends the kernel, includes CUB (under
# an alias, so the string `cub::` never appears), defines a kernel that uses
# it and renames the lab's kernel to it with a macro. All of CUB is inlined:
# only the PTX's .file list shows it.
CUB_BREAKOUT = """\
}}
}}  // namespace
#include <cub/{header}>
namespace lib = cub;
namespace {{
__global__ void lab_block_sum(const int* __restrict__ in, std::size_t n, int* __restrict__ block_sums) {{
  const std::size_t i = std::size_t{{blockIdx.x}} * blockDim.x + threadIdx.x;
  const int mine = i < n ? in[i] : 0;
{code}
}}
#define block_sum lab_block_sum
__device__ void lab_unused() {{
"""

BLOCK_REDUCE = """\
  using Reduce = lib::BlockReduce<int, kThreads>;
  __shared__ typename Reduce::TempStorage scratch;
  const int sum = Reduce(scratch).Sum(mine);  // the call
  if (threadIdx.x == 0) block_sums[blockIdx.x] = sum;
"""

WARP_REDUCE = """\
  using Reduce = lib::WarpReduce<int>;
  __shared__ typename Reduce::TempStorage scratch[kThreads / 32];
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  const int sum = Reduce(scratch[threadIdx.x / 32]).Sum(mine);  // the call
  if (threadIdx.x % 32 == 0) atomicAdd(&total, sum);
  __syncthreads();
  if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
"""


# The course GPU (sm_90) runs this CUB path; the oldest target, sm_75, never sees it.
NEWER_GPUS_ONLY = f"""\
#if __CUDA_ARCH__ >= 800
{BLOCK_REDUCE}#else
  if (threadIdx.x == 0) block_sums[blockIdx.x] = mine;
#endif
"""


@needs_nvcc
@pytest.mark.parametrize(
    "header,code",
    [
        ("block/block_reduce.cuh", BLOCK_REDUCE),
        ("warp/warp_reduce.cuh", WARP_REDUCE),
        ("block/block_reduce.cuh", NEWER_GPUS_ONLY),
    ],
    ids=["BlockReduce", "WarpReduce", "BlockReduce-sm80-only"],
)
def test_cub_inside_a_kernel_is_caught_from_the_ptx(header, code, tmp_path, work):
    text = with_fence("04", "block_sum", CUB_BREAKOUT.format(header=header, code=code))
    assert policy.check_strings(COURSE.lab("04"), write(tmp_path / "s", "reduce.cu", text)) == []
    result = linked("04", text, tmp_path, work)
    assert_caught(result, "/cub/", "Library reductions", line_of(text, "// the call"))


@needs_nvcc
def test_device_side_copy_is_caught_in_lab_10(tmp_path, work):
    """The device runtime renames cudaMemcpyAsync to __cudaCDP2MemcpyAsync."""
    text = with_fence(
        "10",
        "nested_sum",
        """\
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    int first;
    cudaMemcpyAsync(&first, in, sizeof first, cudaMemcpyDefault, cudaStreamFireAndForget);  // here
  }
"""
        + _fence_body("10", "nested_sum"),
    )
    assert_caught(
        linked("10", text, tmp_path, work),
        "MemcpyAsync",
        "Copying between host and device",
        line_of(text, "// here"),
    )


# ---------------------------------------------------------------- honest code

HONEST_04 = {
    "renamed": """\
  __shared__ int sums[kThreads];
  const unsigned me = threadIdx.x;
  const std::size_t at = std::size_t{blockIdx.x} * blockDim.x + me;
  sums[me] = at < n ? in[at] : 0;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
    if (me < half) sums[me] += sums[me + half];
    __syncthreads();
  }
  if (me == 0) block_sums[blockIdx.x] = sums[0];
""",
    "lambda_unroll_minmax": """\
  __shared__ int partial[kThreads];
  const auto add = [](int a, int b) { return a + b; };
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + tid;
  partial[tid] = i < n ? in[i] : 0;
  __syncthreads();
#pragma unroll
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] = add(partial[tid], partial[min(tid + s, kThreads - 1)]);
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = max(partial[0], partial[0]);
""",
    "shuffle_atomic": """\
  __shared__ int total;
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + tid;
  int v = i < n ? in[i] : 0;
  if (tid == 0) total = 0;
  __syncthreads();
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (tid % 32 == 0) atomicAdd(&total, v);
  __syncthreads();
  if (tid == 0) block_sums[blockIdx.x] = total;
""",
}


@needs_nvcc
@pytest.mark.parametrize("variant", sorted(HONEST_04))
def test_honest_lab04_variations_pass(variant, tmp_path, work):
    result = linked("04", with_fence("04", "block_sum", HONEST_04[variant]), tmp_path, work)
    assert result.compiled and result.judged, result.log
    assert result.violations == []


HONEST_01 = {
    "lambda_and_renamed": """\
  const auto plus = [](int a, int b) { return a + b; };
  int acc = 0;
  for (std::size_t k = 0; k < n; ++k) acc = plus(acc, in[k]);
  return acc;
""",
    "min_max_unroll": """\
  int total = 0;
  const std::size_t stop = std::max<std::size_t>(std::min<std::size_t>(n, n), 0);
#pragma GCC unroll 4
  for (std::size_t i = 0; i < stop; ++i) total += in[i];
  return total;
""",
}


@needs_gxx
@pytest.mark.parametrize("variant", sorted(HONEST_01))
def test_honest_lab01_variations_pass(variant, tmp_path, work):
    result = linked("01", with_fence("01", "sum_sequential", HONEST_01[variant]), tmp_path, work)
    assert result.compiled and result.judged, result.log
    assert result.violations == []


# ---------------------------------------------------------------- failures and cost


@needs_nvcc
def test_a_file_that_does_not_compile_is_no_violation_but_strings_still_count(tmp_path, work):
    text = with_fence("04", "block_sum", "  cudaMemcpy(block_sums, in, 4, cudaMemcpyDefault)\n")
    result = linked("04", text, tmp_path, work)
    assert not result.compiled and result.violations == [] and "error" in result.log
    found = policy.check_strings(COURSE.lab("04"), write(tmp_path / "s", "reduce.cu", text))
    assert [v.found for v in found] == ["cudaMemcpy"]


def test_timeout_kills_the_whole_process_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    ran = symbols.run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], timeout=1)
    assert ran.rc is None and time.monotonic() - started < 30
    child = int(pid_file.read_text())
    assert _gone_or_zombie(child)


def test_output_is_capped(tmp_path):
    ran = symbols.run([sys.executable, "-c", "print('x' * 100000)"], timeout=30, cap=1000)
    assert ran.rc == 0 and ran.truncated and len(ran.out) == 1000


@pytest.mark.parametrize(
    "lab_id,fence,body",
    [("01", "sum_sequential", None), ("04", "block_sum", None)],
    ids=["lab01", "lab04"],
)
def test_seconds_per_check(lab_id, fence, body, tmp_path, work, capsys):
    """What one student file costs once the baselines are cached (a batch)."""
    lab = COURSE.lab(lab_id)
    if (TOOLS.nvcc if lab.files[0].endswith(".cu") else TOOLS.gxx) is None:
        pytest.skip("the compiler is not installed")
    text = with_fence(lab_id, fence, _fence_body(lab_id, fence))
    linked(lab_id, text, tmp_path, work)  # warm: the skeleton and reference are cached
    times = []
    for _ in range(3):
        result = linked(lab_id, text, tmp_path, work)
        assert result.compiled and result.violations == []
        times.append(result.seconds)
    with capsys.disabled():
        print(
            f"\n[policy] check_linked lab {lab_id}: {min(times):.2f} s per file "
            f"(min of {', '.join(f'{t:.2f}' for t in times)})"
        )


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    "demangled,bare",
    [
        ("int std::accumulate<int const*, int>(int const*, int const*, int)", "std::accumulate"),
        (
            "std::iterator_traits<int const*>::value_type std::reduce<int const*>(int const*, int const*)",
            "std::reduce",
        ),
        ("cudaMemcpy", "cudaMemcpy"),
        (
            "sum_threads(int const*, unsigned long, unsigned int)::{lambda()#1}::operator()() const",
            "sum_threads::{lambda()#1}::operator()",
        ),
        (
            "(anonymous namespace)::block_sum(int const*, unsigned long, int*)",
            "(anonymous namespace)::block_sum",
        ),
        (
            "cub::CUB_300001_SM_750::detail::max_smem_per_block",
            "cub::CUB_300001_SM_750::detail::max_smem_per_block",
        ),
        (
            "guard variable for sum_sequential(int const*, unsigned long)::seen",
            "sum_sequential::seen",
        ),
        ("std::vector<int, std::allocator<int> >::~vector()", "std::vector::~vector"),
        (
            "std::basic_ofstream<char, std::char_traits<char> >::open(char const*, std::_Ios_Openmode)",
            "std::basic_ofstream::open",
        ),
    ],
)
def test_bare_name(demangled, bare):
    assert symbol_names.bare_name(demangled) == bare


def test_made_up_names_are_normalised():
    assert (
        symbol_names.normalise("_GLOBAL__N__ec2461c6_9_reduce_cu_95aa22e0::block_sum(int*)")
        == "(anonymous namespace)::block_sum(int*)"
    )
    assert symbol_names.normalise("_GLOBAL__sub_I_sum_sequential") == "_GLOBAL__sub_I_"


def test_policy_toml_loads_with_a_reason_for_every_category():
    categories = policy.load_categories()
    assert {c.name for c in categories} >= {
        "copies",
        "host_memory",
        "device_memory",
        "system",
        "dynamic_loading",
        "startup_and_exit",
        "library_reductions",
        "system_calls",
    }
    assert all(c.why.endswith(".") for c in categories)
    assert [c.symbols for c in policy.lab_categories(COURSE.lab("10"))][-1] == (
        "cudaDeviceSynchronize*",
    )


# ---------------------------------------------------------------- helpers


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


def _fence_body(lab_id: str, fence: str) -> str:
    lab = COURSE.lab(lab_id)
    reference = (REPO / "solutions" / lab.id / lab.files[0]).read_text()
    return next(f.body for f in fences.extract(reference) if f.name == fence)


def _gone_or_zombie(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False
