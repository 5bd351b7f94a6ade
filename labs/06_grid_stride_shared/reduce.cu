// Lab 06: a grid-stride loop, then shared memory. The handout is README.md.
//
// What labs 02-05 waste: a block retires after 256 or 512 inputs, so a large
// input needs hundreds of thousands of blocks, each paying a full tree with
// a barrier per step, and several passes over the partial sums.
//
// Here the grid is sized to the GPU, not to the input: as many threads as its
// multiprocessors hold at once. Each thread walks the input with a stride of
// the whole grid, adding into a register, with four independent loads in
// flight per step so that the memory system always has requests to serve.
// Only then do the block's threads combine their sums in shared memory, once.
// Two launches: the grid over the input, then one block over the grid's
// partial sums.
//
// A common first version launches a fixed 32 blocks, far fewer threads than the
// GPU holds, and is far slower. What remains: the second launch, and the cost
// of two passes on small inputs. Lab 07 folds the second pass into atomics.
//
// Only the fenced regions are yours; the grader restores everything else.
#include <algorithm>
#include <cstddef>

#include "lab_fence.cuh"
#include "sum_contract.cuh"
#include "tree_passes.cuh"

namespace {

constexpr unsigned kThreads = 256;  // a power of two: the tree halves it

// Blocks of kThreads for the first pass over n inputs on a GPU with
// `sm_count` multiprocessors.
unsigned grid_blocks(std::size_t n, int sm_count) {
  // ---- your code here (grid_blocks) ----
  // TODO: return how many blocks the first pass launches. The grid is sized to the GPU,
  // not to the input: as many threads as the sm_count multiprocessors run at once (2048
  // each). A small input gets fewer blocks, no more than it can give one element per
  // thread, and never 0: n = 0 (the workspace size) and n = 18 come here too. n goes
  // above 2^32, so count in 64 bits before you narrow the result.
  // The handout (README.md) explains the idea; `python3 -m grader hint 06` helps one step
  // at a time.
  LAB_TODO_HOST("grid_blocks");
  // ---- end ----
}

// Thread t of the grid adds in[t], in[t + stride], in[t + 2*stride], ...
// (stride = all threads of the grid); the block then combines its threads'
// sums and thread 0 writes block_sums[blockIdx.x].
__global__ void grid_sum(const int* __restrict__ in, std::size_t n, int* __restrict__ block_sums) {
  // ---- your code here (grid_sum) ----
  // TODO: leave in this block's slot of block_sums the sum of every element its threads
  // read, by a grid-stride loop: each thread walks in[0, n) with the whole grid's width as
  // its step, adding into a register with several independent loads in flight, and the
  // block combines its threads' sums in shared memory once, at the end. Traps the tests
  // check: the register starts at 0; n is seldom a multiple of the step and can be below
  // the grid's size; n goes above 2^32, so indices are 64-bit; every thread reaches every
  // __syncthreads().
  // The handout (README.md) explains the idea; `python3 -m grader hint 06` helps one step
  // at a time.
  LAB_TODO();
  // ---- end ----
}

}  // namespace

std::size_t sum_workspace_bytes(std::size_t n) {
  return grid_blocks(n, lab::current_sm_count()) * sizeof(int);
}

void reduce_sum(const int* in, std::size_t n, int* out, void* workspace, cudaStream_t stream) {
  const unsigned blocks = n ? grid_blocks(n, lab::current_sm_count()) : 1;
  lab::run_two_passes<int>(grid_sum, blocks, kThreads, in, n, out, static_cast<int*>(workspace), 0,
                           stream);
}
