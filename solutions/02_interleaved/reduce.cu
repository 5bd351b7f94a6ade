// Lab 02: interleaved addressing. The handout is README.md in this folder.
//
// The first tree on the GPU. Each block loads 256 consecutive inputs into
// shared memory and adds them in log2(256) = 8 steps, as the handout's
// picture shows.
//
// What it does wrong: the threads that work in a step are spread out (every
// 2nd, then every 4th, ...), so each warp holds busy and idle threads side by
// side and runs the `if` for all of them: divergence. Every warp stays
// resident until the last step, and deciding who works costs a remainder per
// step. Lab 03 packs the busy threads together.
//
// Only the fenced region is yours; the grader restores everything else.
#include <cstddef>

#include "lab_fence.cuh"
#include "sum_contract.cuh"
#include "tree_passes.cuh"

namespace {

constexpr unsigned kThreads = 256;  // a power of two: the tree halves it

// Block b sums in[b*blockDim.x, (b+1)*blockDim.x) (as far as n allows) into
// block_sums[b].
__global__ void block_sum(const int* __restrict__ in, std::size_t n, int* __restrict__ block_sums) {
  // ---- your code here (block_sum) ----
  __shared__ int partial[kThreads];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + tid;
  partial[tid] = i < n ? in[i] : 0;
  __syncthreads();
  // kThreads, not blockDim.x: with a trip count known at compile time the loop
  // unrolls, s becomes a constant in each step, and % turns into a mask.
  // With blockDim.x every step divides, and this kernel runs at half speed.
  for (unsigned s = 1; s < kThreads; s *= 2) {
    if (tid % (2 * s) == 0) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
  // ---- end ----
}

}  // namespace

std::size_t sum_workspace_bytes(std::size_t n) {
  return lab::tree_workspace_elements(n, kThreads) * sizeof(int);
}

void reduce_sum(const int* in, std::size_t n, int* out, void* workspace, cudaStream_t stream) {
  lab::run_tree_passes<int>(block_sum, kThreads, kThreads, in, n, out, static_cast<int*>(workspace),
                            0, stream);
}
