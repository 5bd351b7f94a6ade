// Lab 02: interleaved addressing. The handout is README.md in this folder.
//
// The first tree on the GPU. Each block loads 256 consecutive inputs into
// shared memory; in the step with stride s = 1, 2, 4, ... every thread whose
// index is a multiple of 2*s adds the element s places to its right. After
// log2(256) = 8 steps, partial[0] holds the block's sum.
//
// What it does wrong: the threads that work in a step are spread out (every
// 2nd, then every 4th, ...), so each warp holds busy and idle threads side by
// side and runs the `if` for all of them: divergence. Every warp stays
// resident until the last step, and `tid % (2*s)` costs a modulo per step.
// Lab 03 packs the busy threads together.
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
  // TODO: load element i = blockIdx.x * blockDim.x + threadIdx.x (0 past the
  // end: n need not be a multiple of the block) into a __shared__ array of
  // kThreads ints. Then for s = 1, 2, 4, ... < kThreads: a thread whose
  // index is a multiple of 2*s adds element tid + s onto element tid, with
  // __syncthreads() after every step (outside the if). Thread 0 writes the
  // block's sum to block_sums[blockIdx.x]. Index with std::size_t.
  LAB_TODO();
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
