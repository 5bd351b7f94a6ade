// Lab 10: a nested reduction by dynamic parallelism. The handout is README.md.
//
// Labs 02-05 run their passes from the host: launch, then launch again over
// the partial sums, until one block is left. Here the GPU launches its own
// next pass. The classic version did this recursively: thread 0 launched a child
// grid over half the data and waited for it with a device-side
// cudaDeviceSynchronize(). CUDA 12 removed that call: a parent grid can no
// longer wait for its children. What replaces it here is a tail launch: a
// grid launched into the special stream cudaStreamTailLaunch starts only
// after the launching grid, every block of it, has finished, and sees all of
// its writes. So block 0 of each pass queues the next pass over this pass's
// partial sums, and the chain ends when one block writes *out. The host makes
// one launch; the device makes the rest.
//
// What it costs: each device-side launch goes through the device runtime
// (relocatable device code, the cudadevrt library, a launch queue on the GPU),
// and a tail launch waits for the whole parent grid. It pays when the host
// does not know how much work comes next; for a reduction it does, and the
// host loop of lab 04 queues every pass in advance (the deck's debrief has the
// numbers).
//
// Only the fenced region is yours; the grader restores everything else.
#include <cstddef>

#include "lab_fence.cuh"
#include "sum_contract.cuh"
#include "tree_passes.cuh"

namespace {

constexpr unsigned kThreads = 256;  // a power of two: the tree halves it

// One pass: block b sums its kThreads inputs of in[0, n) as in lab 04. With one
// block, the pass writes *out; otherwise block b writes partials[b], and block 0
// queues the next pass over partials[0, gridDim.x) as a tail launch, with
// partials + gridDim.x as that pass's own partials.
__global__ void nested_sum(const int* __restrict__ in, std::size_t n, int* partials, int* out) {
  // ---- your code here (nested_sum) ----
  __shared__ int partial[kThreads];
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t{blockIdx.x} * kThreads + tid;
  partial[tid] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid != 0) return;
  if (gridDim.x == 1) {
    *out = partial[0];
    return;
  }
  partials[blockIdx.x] = partial[0];
  if (blockIdx.x == 0) {
    const std::size_t blocks = gridDim.x;
    const unsigned next = static_cast<unsigned>((blocks + kThreads - 1) / kThreads);
    // Runs once every block of this grid has written its partial sum.
    nested_sum<<<next, kThreads, 0, cudaStreamTailLaunch>>>(partials, blocks, partials + blocks,
                                                            out);
  }
  // ---- end ----
}

}  // namespace

std::size_t sum_workspace_bytes(std::size_t n) {
  return lab::tree_workspace_elements(n, kThreads) * sizeof(int);
}

void reduce_sum(const int* in, std::size_t n, int* out, void* workspace, cudaStream_t stream) {
  if (n == 0) {
    lab::store_value(out, 0, stream);
    return;
  }
  const std::size_t blocks = lab::blocks_for(n, kThreads);
  nested_sum<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      in, n, static_cast<int*>(workspace), out);
  CUDA_CHECK_LAUNCH();
}
