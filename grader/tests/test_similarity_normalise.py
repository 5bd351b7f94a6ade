"""The normaliser takes away what a copier changes (names, comments, layout,
the order of independent statements) and keeps what they cannot (the
code's shape, CUDA's own names, the order that the code depends on)."""

from grader.similarity import idioms
from grader.similarity.normalise import normalise, statements

KERNEL = """  __shared__ int partial[kThreads];
  const unsigned tid = threadIdx.x;   // my thread
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + tid;
  partial[tid] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
"""

DISGUISED = """/* written by me */
const unsigned me=threadIdx.x;
__shared__ int buf[kThreads];
const std::size_t where = std::size_t{ blockIdx.x }*blockDim.x+me;
buf[me] = where<n ? in[where] : 0;
__syncthreads();
for (unsigned half = blockDim.x/2; half>0; half>>=1)
{
    if (me<half) buf[me]+=buf[me+half];
    __syncthreads();
}
if (me==0) block_sums[blockIdx.x]=buf[0];
"""


def test_renamed_reformatted_and_reordered_code_normalises_to_the_same_text():
    assert normalise(KERNEL).text == normalise(DISGUISED).text


def test_a_changed_operation_is_still_seen():
    changed = KERNEL.replace("partial[tid] += partial[tid + s]", "partial[tid] -= partial[tid + s]")
    assert normalise(changed).text != normalise(KERNEL).text


def test_dependent_statements_keep_their_order():
    # b reads a: swapping them changes the code, so the texts must differ.
    one = normalise("int a = x[0];\nint b = a * 2;\n")
    two = normalise("int b = a * 2;\nint a = x[0];\n")
    assert one.text != two.text
    # Independent ones may come in either order.
    assert (
        normalise("int a = x[0];\nint b = y[1];\n").text
        == normalise("int b = y[1];\nint a = x[0];\n").text
    )


def test_a_barrier_is_never_crossed():
    before = normalise("int a = x[0];\n__syncthreads();\nint b = y[1];\n")
    after = normalise("int b = y[1];\n__syncthreads();\nint a = x[0];\n")
    assert before.text != after.text


def test_cuda_names_stay_and_student_names_go():
    text = normalise(KERNEL).text
    assert "threadIdx" in text and "blockDim" in text and "__syncthreads" in text
    assert "partial" not in text and "tid" not in text and "my thread" not in text


def test_an_initialiser_in_braces_does_not_cut_a_statement():
    lines = [s.lines for s in statements(KERNEL, first_line=30)]
    assert (32, 32) in lines  # `std::size_t{blockIdx.x} * ...;` is one statement


def test_every_character_maps_back_to_its_source_line():
    norm = normalise(KERNEL, first_line=100)
    at = norm.text.index("__syncthreads")
    assert norm.lines_of(at, at + 5) == {104}
    # Line 100, the shared array's declaration, is boilerplate (idioms) and left out.
    assert norm.lines_of(0, len(norm.text)) == set(range(101, 110))


def test_a_file_is_cut_into_its_outermost_functions():
    from grader.similarity.functions import functions

    code = (
        "namespace lab { struct P { int a; int get() const { return a; } };\n"
        'extern "C" __global__ void k(int* a) { if (a) { a[0] = 1; } }\n'
        "int table[] = {1, 2};\n"
        "template <typename T> __device__ T add(T a, T b) { return a + b; } }\n"
        "A::A() : x(1) { }  // a { in a comment\n"
        'void s() { const char* t = "}"; }\n'
    )
    got = [(f.name, f.first_line, f.body_line, f.body.strip()) for f in functions(code)]
    assert got == [
        ("k", 2, 2, "if (a) { a[0] = 1; }"),
        ("add", 4, 4, "return a + b;"),
        ("A", 5, 5, ""),
        ("s", 6, 6, 'const char* t = "}";'),
    ]


PASTED = """  using T = int;
  typedef unsigned int U;
#define g_idata in
  auto &g_odata = block_sums;
  const T *const src = g_idata;
  const unsigned int blockSize = kThreads;
  namespace cg = cooperative_groups;
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + tid;
  sdata[tid] = i < n ? src[i] : 0;
  cg::sync(cta);
  for (unsigned s = blockSize / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    cta.sync();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
#undef g_idata
"""


def test_aliases_handles_and_shared_declarations_are_boilerplate(monkeypatch):
    """A kernel pasted with the source's names declared as aliases of the
    lab's, and its cooperative-groups barriers, reads as the plain kernel."""
    plain = KERNEL.replace("blockDim.x / 2", "kThreads / 2")
    assert normalise(PASTED).text == normalise(plain).text
    # Without the rules the two differ: the test above can fail.
    monkeypatch.setattr(idioms, "rewrite", lambda found: found)
    assert normalise(PASTED).text != normalise(plain).text


def test_a_variable_that_is_assigned_again_is_no_alias():
    """`unsigned live = kThreads;` starts a loop counter: it is work, and stays;
    so do an assignment through a pointer and a copy written with an index."""
    for code, kept in [
        ("unsigned live = kThreads;\nlive /= 2;\n", "unsignedV=V;"),
        ("*p = q;\n", "*V=V;"),
        ("int x = a[0];\n", "intV=V[0];"),
        ("lab::total = q;\n", "V::V=V;"),
    ]:
        text = normalise(code).text
        assert text.startswith(kept), (code, text)


def test_a_template_with_a_class_parameter_is_a_function():
    from grader.similarity.functions import functions

    code = (
        "template <class T> struct Box { T v; };\n"
        "template <class T, unsigned int blockSize>\n"
        "__global__ void reduce0(T* a) { a[0] = 1; }\n"
        "template <typename T> __device__ T twice(T a) { return a + a; }\n"
    )
    assert [(f.name, f.body.strip()) for f in functions(code)] == [
        ("reduce0", "a[0] = 1;"),
        ("twice", "return a + a;"),
    ]
