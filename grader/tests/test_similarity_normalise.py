"""The normaliser takes away what a copier changes (names, comments, layout,
the order of independent statements) and keeps what they cannot (the
code's shape, CUDA's own names, the order that the code depends on)."""

from grader.commands.similarity.normalise import normalise, statements

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
    assert norm.lines_of(0, len(norm.text)) == set(range(100, 110))


def test_a_file_is_cut_into_its_outermost_functions():
    from grader.commands.similarity.functions import functions

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
