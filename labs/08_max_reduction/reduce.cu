// Lab 08: max reduction over floats. The handout is README.md in this folder.
//
// The grid-stride kernel of lab 06 with another operator. Three things change
// with it, and each is a classic mistake:
//   - the identity: what a thread starts from, and what stands in for missing
//     elements, must lose to every input. For max that is -inf. A common
//     first version starts from RAND_MIN (not a standard macro); 0 is wrong on
//     all-negative input, -FLT_MAX on an input of -inf.
//   - NaN: fmaxf(x, NaN) returns x, so a NaN in the input vanishes.
//     lab::max_op (common/max_op.hpp) returns NaN if either operand is NaN,
//     and ranks +0.0 above -0.0: the result does not depend on the order.
//   - no atomicMax for float: an integer atomicMax on a float's bits orders
//     negative floats backwards. Two passes need no atomic at all.
//
// Only the fenced region is yours; the grader restores everything else.
#include <cmath>
#include <cstddef>

#include "lab_fence.cuh"
#include "max_contract.cuh"
#include "max_op.hpp"
#include "tree_passes.cuh"

namespace {

constexpr unsigned kThreads = 256;  // a power of two: the tree halves it

// Thread t of the grid takes the max of in[t], in[t + stride], ... (stride =
// all threads of the grid); the block then combines its threads' maxima and
// thread 0 writes block_maxes[blockIdx.x].
__global__ void grid_max(const float* __restrict__ in, std::size_t n,
                         float* __restrict__ block_maxes) {
  // ---- your code here (grid_max) ----
  // TODO: leave in this block's slot of block_maxes the max of every element its threads
  // read: lab 06's grid-stride loop and shared-memory tree, with lab::max_op as the
  // operator. Traps the tests check: a thread starts from the identity of max, -inf, the
  // one value that loses to every float (0 and -FLT_MAX do not); a NaN anywhere must win,
  // and fmaxf drops it; +0.0 ranks above -0.0; n is seldom a multiple of the grid and goes
  // above 2^32, so indices are 64-bit; every thread reaches every __syncthreads() (on
  // `ascending` input each block's max starts in its last threads and climbs the tree).
  // The handout (README.md) states the goal; `python3 -m grader hint 08` gives hints.
  LAB_TODO();
  // ---- end ----
}

}  // namespace

std::size_t max_workspace_bytes(std::size_t n) {
  return lab::fill_grid_blocks(n, kThreads) * sizeof(float);
}

void reduce_max(const float* in, std::size_t n, float* out, void* workspace, cudaStream_t stream) {
  lab::run_two_passes<float>(grid_max, lab::fill_grid_blocks(n, kThreads), kThreads, in, n, out,
                             static_cast<float*>(workspace), -INFINITY, stream);
}
