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
  const std::size_t fill_the_gpu = std::size_t{8} * sm_count;
  const std::size_t one_element_per_thread = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(
      std::max<std::size_t>(1, std::min(fill_the_gpu, one_element_per_thread)));
  // ---- end ----
}

// Thread t of the grid adds in[t], in[t + stride], in[t + 2*stride], ...
// (stride = all threads of the grid); the block then combines its threads'
// sums and thread 0 writes block_sums[blockIdx.x].
__global__ void grid_sum(const int* __restrict__ in, std::size_t n, int* __restrict__ block_sums) {
  // ---- your code here (grid_sum) ----
  constexpr int kLoads = 4;  // independent loads in flight per step
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  int sum = 0;
  for (; i + (kLoads - 1) * stride < n; i += kLoads * stride) {
    int v[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) v[k] = in[i + k * stride];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) sum += v[k];
  }
  for (; i < n; i += stride) sum += in[i];

  __shared__ int partial[kThreads];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) block_sums[blockIdx.x] = partial[0];
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
