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
  // TODO: leave in block_sums[blockIdx.x] the sum of this block's slice of the input, one
  // input per thread, reduced in shared memory by the handout's 8 steps, whose busy threads
  // are spread out: interleaved addressing. Traps the tests check: n is rarely a multiple of
  // the block, so a thread past the end reads nothing and contributes 0; n goes above 2^32,
  // so the input index is 64-bit; every thread, busy or idle, reaches every
  // __syncthreads(). Bound the steps by kThreads, a compile-time constant.
  // The handout (README.md) explains the idea; `python3 -m grader hint 02` helps one step
  // at a time.
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
