// Lab 03: strided index. The handout is README.md in this folder.
//
// What lab 02 got wrong: the busy threads of a step were spread over every
// warp (divergence). Here each step's pairs of words go to the lowest-numbered
// threads, so the busy threads are t = 0, 1, 2, ...: contiguous, and whole
// warps go idle together.
//
// What it does wrong: the words a warp touches in one step lie further apart
// at every step. Shared memory has 32 banks of 4-byte words, and word w lives
// in bank w % 32. At s = 1 a warp's 32 threads touch words 0, 2, 4, ... 62:
// two threads per bank, a 2-way conflict; at s = 2, 4-way; from s = 4 on,
// 8-way. Conflicting accesses are served one after another. On an H200 this
// costs more than the divergence it removes: lab 03 is slower than lab 02.
// Lab 04 keeps the busy threads contiguous and makes the accesses
// conflict-free.
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
  // TODO: leave in block_sums[blockIdx.x] the sum of this block's slice of the input, reduced
  // in shared memory by a tree whose busy threads in every step are the lowest-numbered ones,
  // each adding a pair of words that lie further apart at every step: the strided index.
  // Traps the tests check: n is seldom a multiple of the block, so a thread past the end reads
  // nothing and contributes 0; n goes above 2^32, so the input index is 64-bit; every thread,
  // busy or idle, reaches every __syncthreads().
  // The handout (README.md) explains the idea; `python3 -m grader hint 03` helps one step
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
