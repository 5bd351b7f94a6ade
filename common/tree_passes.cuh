// The multi-pass driver shared by the block-tree labs (02-05). Each pass
// launches one block per `per_block` inputs; a block writes one partial result.
// Passes repeat over the partials until one block is left, which writes *out.
//
// Every pass is queued on the caller's stream: no host synchronisation, so a
// whole reduction can be timed as one unit and run beside others on other streams.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "cuda_check.cuh"

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

}  // namespace lab
