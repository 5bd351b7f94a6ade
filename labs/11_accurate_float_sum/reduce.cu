// Lab 11: accurate float sums. The handout is README.md in this folder.
//
// Every float addition rounds to 24 significant bits. Adding a small value to
// a large running sum loses the small value's low bits, or all of it; large
// values that cancel leave behind only the rounding errors of the additions
// that made them. How much is lost depends on the order and on the precision
// of the accumulator, and all four methods here read the same bytes:
//   - naive: a float register per thread over a grid-stride loop, then a
//     float tree. Each thread adds hundreds of values into one register.
//   - pairwise: one element per thread, then the float tree of lab 04: every
//     value goes through only log2(n) additions, each between partial sums of
//     similar size. The error grows with log2(n), not with n.
//   - compensated (Kahan, in Neumaier's form): each thread carries, beside its
//     sum s, the sum c of what rounding threw away; TwoSum gives the exact
//     error of each addition whichever operand is larger (Kahan's original
//     step assumes |s| >= |x|, and loses accuracy when inputs of random sign
//     and size keep s small: an H200 run measured 5.6 ulps for it). The tree
//     combines (s, c) pairs the same way. The error no longer grows with n.
//   - double: accumulate in double (53 bits) and round once at the end. On a
//     Hopper GPU double addition runs at half the float rate; a memory-bound
//     reduction does not notice.
// Common advice says: double, and sort first. Sorting costs far more than
// the sum; the handout measures what each method gains without it.
//
// Only the fenced regions are yours; the grader restores everything else.
#include <cstddef>

#include "float_sum_contract.cuh"
#include "lab_fence.cuh"
#include "tree_passes.cuh"

namespace lab11 {

constexpr unsigned kThreads = 256;  // a power of two: the tree halves it

// Accumulators: identity, add one input, combine two partial results, round to float.
struct Naive {
  float s;
  __device__ static Naive identity() { return {0.0f}; }
  __device__ void add(float x) { s += x; }
  __device__ void combine(const Naive& o) { s += o.s; }
  __device__ float result() const { return s; }
};

struct Kahan {
  float s;  // the running sum
  float c;  // the rounding errors of the additions into s, to be added back
  __device__ static Kahan identity() { return {0.0f, 0.0f}; }
  __device__ void add(float x) {
    // ---- your code here (kahan_add) ----
    // TODO: add x to the running sum s, and add to c exactly what the rounding of that
    // addition lost, so that s and c together still hold the exact sum: compensated
    // summation with TwoSum (Neumaier's form). Trap the tests check: the error must be
    // exact whichever of the two is larger in magnitude. Kahan's shorter step is not,
    // and misses the 2^-22 relative bound on the cancellation input by far.
    // The handout (README.md) explains the idea; "Stuck? The steps" has them.
    LAB_TODO();
    // ---- end ----
  }
  __device__ void combine(const Kahan& o) {
    // ---- your code here (kahan_combine) ----
    // TODO: merge the other accumulator o into this one and lose nothing: the running
    // sums meet by TwoSum again, and c must end up holding both sides' compensations and
    // the exact error of this addition, since result() adds c back once, at the end.
    // Trap the tests check: drop any of the three and the tree loses the small values of
    // the cancellation input (millions of ulps, where the limit is 2^-22 relative).
    // The handout (README.md) explains the idea; "Stuck? The steps" has them.
    LAB_TODO();
    // ---- end ----
  }
  __device__ float result() const { return s + c; }
};

struct Double {
  double s;
  __device__ static Double identity() { return {0.0}; }
  __device__ void add(float x) {
    // ---- your code here (double_add) ----
    // TODO: add x to s in double precision (53 bits), so that the sum is rounded to float
    // only once, in result(), after the tree. Trap the tests check: a sum that goes back
    // through float at any step loses the cancellation input's small values.
    // The handout (README.md) explains the idea; "Stuck? The steps" has them.
    LAB_TODO();
    // ---- end ----
  }
  __device__ void combine(const Double& o) { s += o.s; }
  __device__ float result() const { return static_cast<float>(s); }
};

// Grid-stride accumulation, then the block's accumulators combined in a
// shared-memory tree; thread 0 writes the block's accumulator.
template <class Acc>
__global__ void grid_accumulate(const float* __restrict__ in, std::size_t n, Acc* block_accs) {
  constexpr int kLoads = 4;  // independent loads in flight per step, as in lab 06
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  Acc acc = Acc::identity();
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (; i + (kLoads - 1) * stride < n; i += kLoads * stride) {
    float v[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) v[k] = in[i + k * stride];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) acc.add(v[k]);
  }
  for (; i < n; i += stride) acc.add(in[i]);
  __shared__ Acc partial[kThreads];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x].combine(partial[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) block_accs[blockIdx.x] = partial[0];
}

// One block combines the grid's accumulators and rounds the total to float.
template <class Acc>
__global__ void finish(const Acc* block_accs, unsigned blocks, float* out) {
  Acc acc = Acc::identity();
  for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) acc.combine(block_accs[b]);
  __shared__ Acc partial[kThreads];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x].combine(partial[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0].result();
}

// Pairwise: one element per thread and lab 04's tree, in float, over passes.
__global__ void pairwise_block(const float* __restrict__ in, std::size_t n, float* block_sums) {
  __shared__ float partial[kThreads];
  const std::size_t i = std::size_t{blockIdx.x} * kThreads + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) block_sums[blockIdx.x] = partial[0];
}

template <class Acc>
void run_accumulate(const float* in, std::size_t n, float* out, void* workspace,
                    cudaStream_t stream) {
  const unsigned blocks = lab::fill_grid_blocks(n, kThreads);
  auto* accs = static_cast<Acc*>(workspace);
  grid_accumulate<Acc><<<blocks, kThreads, 0, stream>>>(in, n, accs);
  CUDA_CHECK_LAUNCH();
  finish<Acc><<<1, kThreads, 0, stream>>>(accs, blocks, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab11

using namespace lab11;

std::size_t float_sum_workspace_bytes(std::size_t n) {
  const std::size_t accumulators = lab::fill_grid_blocks(n, kThreads) * sizeof(Double);
  const std::size_t tree = lab::tree_workspace_elements(n, kThreads) * sizeof(float);
  return accumulators > tree ? accumulators : tree;
}

void reduce_sum_float(const float* in, std::size_t n, float* out, void* workspace,
                      FloatSumMethod method, cudaStream_t stream) {
  if (n == 0) {
    lab::store_value(out, 0.0f, stream);
    return;
  }
  switch (method) {
    case FloatSumMethod::kNaive: return run_accumulate<Naive>(in, n, out, workspace, stream);
    case FloatSumMethod::kKahan: return run_accumulate<Kahan>(in, n, out, workspace, stream);
    case FloatSumMethod::kDouble: return run_accumulate<Double>(in, n, out, workspace, stream);
    case FloatSumMethod::kPairwise:
      return lab::run_tree_passes<float>(pairwise_block, kThreads, kThreads, in, n, out,
                                         static_cast<float*>(workspace), 0.0f, stream);
  }
}
