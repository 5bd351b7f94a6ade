// Lab 05: two loads per thread. The handout is README.md in this folder.
//
// What lab 04 wastes: every thread loads one element, and half of the threads
// idle from the first step of the tree on. Here a block of 256 threads covers
// 512 inputs: each thread loads two of them, a block's width apart, and adds
// them on the way into shared memory. The first level of the tree costs no barrier and no
// idle threads, a block moves twice the bytes for the same tree, and half as
// many blocks are launched.
//
// What it still wastes: each thread has only two loads in flight before the
// tree, and a block that retires after 2 KiB of input pays the whole tree and
// a launch slot for it. Lab 06 keeps a fixed grid busy with a loop.
//
// Only the fenced region is yours; the grader restores everything else.
#include <cstddef>

#include "lab_fence.cuh"
#include "sum_contract.cuh"
#include "tree_passes.cuh"

namespace {

constexpr unsigned kThreads = 256;  // a power of two: the tree halves it

// Block b sums in[b*2*blockDim.x, (b+1)*2*blockDim.x) (as far as n allows)
// into block_sums[b].
__global__ void block_sum(const int* __restrict__ in, std::size_t n, int* __restrict__ block_sums) {
  // ---- your code here (block_sum) ----
  // TODO: leave in block_sums[blockIdx.x] the sum of this block's slice, twice the block's
  // size: each thread adds two inputs, a block's width apart, on the way into shared memory,
  // and the block then runs lab 04's tree. Traps the tests check: blocks start a whole slice
  // apart, not a block apart; the last slice is often partly filled, and each of the two loads
  // needs its own bound (nothing may be read past in[n-1]); n goes above 2^32, so the input
  // index is 64-bit; every thread reaches every __syncthreads().
  // The handout (README.md) explains the idea; `python3 -m grader hint 05` helps one step
  // at a time.
  LAB_TODO();
  // ---- end ----
}

}  // namespace

constexpr std::size_t kPerBlock = 2 * kThreads;  // inputs one block reduces

std::size_t sum_workspace_bytes(std::size_t n) {
  return lab::tree_workspace_elements(n, kPerBlock) * sizeof(int);
}

void reduce_sum(const int* in, std::size_t n, int* out, void* workspace, cudaStream_t stream) {
  lab::run_tree_passes<int>(block_sum, kThreads, kPerBlock, in, n, out,
                            static_cast<int*>(workspace), 0, stream);
}
