// Drivers shared by the labs' harnesses: the multi-pass tree of labs 02-05
// (one block per `per_block` inputs, passes repeated over the partial results
// until one block writes *out) and the two passes of the grid-stride labs
// (a grid that fills the GPU, then one block over its partial results).
//
// Every pass is queued on the caller's stream: no host synchronisation, so a
// whole reduction can be timed as one unit and run beside others on other streams.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "cuda_check.cuh"
#include "device_info.hpp"

namespace lab {

// kernel<<<blocks, threads>>>(in, n, partials): block b reduces its slice of
// in[0, n) into partials[b].
template <class T>
using BlockKernel = void (*)(const T*, std::size_t, T*);

inline std::size_t blocks_for(std::size_t n, std::size_t per_block) {
  return (n + per_block - 1) / per_block;
}

// Partials of every pass but the last (which writes *out) stored back to back.
inline std::size_t tree_workspace_elements(std::size_t n, std::size_t per_block) {
  std::size_t total = 0;
  for (std::size_t m = blocks_for(n, per_block); m > 1; m = blocks_for(m, per_block)) total += m;
  return total;
}

template <class T>
__global__ void store_value_kernel(T* out, T value) {
  *out = value;
}

template <class T>
void store_value(T* out, T value, cudaStream_t stream) {
  store_value_kernel<<<1, 1, 0, stream>>>(out, value);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void run_tree_passes(BlockKernel<T> kernel, unsigned threads, std::size_t per_block, const T* in,
                     std::size_t n, T* out, T* workspace, T identity, cudaStream_t stream) {
  if (n == 0) {
    store_value(out, identity, stream);
    return;
  }
  const T* src = in;
  T* next = workspace;
  for (std::size_t m = n;;) {
    const std::size_t blocks = blocks_for(m, per_block);
    if (blocks > static_cast<std::size_t>(INT_MAX))
      throw std::length_error("run_tree_passes: " + std::to_string(m) +
                              " inputs need more blocks than a grid holds");
    T* dst = blocks == 1 ? out : next;
    kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(src, m, dst);
    CUDA_CHECK_LAUNCH();
    if (blocks == 1) return;
    src = dst;
    next += blocks;
    m = blocks;
  }
}

// Blocks for a grid-stride kernel: `per_sm` blocks on every multiprocessor
// (8 x 256 threads = 2048, all an SM of compute capability 8.0 and 9.0 holds
// at once; Turing's hold 1024, and the extra blocks wait their turn), but no
// more blocks than there are block-sized slices of input.
inline unsigned fill_grid_blocks(std::size_t n, unsigned threads, unsigned per_sm = 8) {
  const std::size_t wanted = std::size_t{per_sm} * static_cast<unsigned>(current_sm_count());
  const std::size_t useful = blocks_for(n, threads);
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, useful)));
}

// First pass: `blocks` blocks over in[0, n), one partial result each, into
// the workspace; second pass: one block over those partials into *out.
template <class T>
void run_two_passes(BlockKernel<T> kernel, unsigned blocks, unsigned threads, const T* in,
                    std::size_t n, T* out, T* workspace, T identity, cudaStream_t stream) {
  if (n == 0) {
    store_value(out, identity, stream);
    return;
  }
  kernel<<<blocks, threads, 0, stream>>>(in, n, blocks == 1 ? out : workspace);
  CUDA_CHECK_LAUNCH();
  if (blocks == 1) return;
  kernel<<<1, threads, 0, stream>>>(workspace, blocks, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab
