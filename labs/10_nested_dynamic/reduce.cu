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
  // TODO: sum this block's kThreads inputs with lab 04's shared-memory tree. A grid of one
  // block is the last pass and leaves the total in *out; any other block leaves its sum in
  // its own slot of partials, and one thread of the whole grid queues the next pass over
  // those sums from the device, as a tail launch (it starts once this grid has finished).
  // That pass writes its sums past the ones it reads, never over them. Traps the tests
  // check: n above 2^32 (64-bit index), threads past the end of in[] (read nothing, add 0),
  // every thread at every barrier, no device-side cudaDeviceSynchronize (gone in CUDA 12).
  // The handout (README.md) states the goal; `python3 -m grader hint 10` gives hints.
  LAB_TODO();
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
