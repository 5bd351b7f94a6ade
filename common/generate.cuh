// Writes and checks counter-based inputs (any type with `T at(size_t) const`)
// on the GPU, so tests never move large inputs across PCIe.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cuda_check.cuh"

namespace lab {

template <class T>
struct ConstantInput {
  T value;
  __host__ __device__ T at(std::size_t) const { return value; }
};

namespace detail {

// Enough blocks to fill any current GPU; each thread strides over the rest.
constexpr unsigned kGenerateBlocks = 4096;
constexpr unsigned kGenerateThreads = 256;

template <class T, class Input>
__global__ void generate_kernel(T* out, std::size_t n, Input input) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = input.at(i);
}

template <class T>
__device__ bool same_bits(T a, T b) {
  static_assert(sizeof(T) == 4, "inputs are 4-byte types");
  std::uint32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  return x == y;  // Bitwise, so that NaN inputs compare equal to themselves.
}

template <class T, class Input>
__global__ void count_changes_kernel(const T* data, std::size_t n, Input input,
                                     unsigned long long* changes) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  unsigned long long mine = 0;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    mine += same_bits(data[i], input.at(i)) ? 0 : 1;
  if (mine) atomicAdd(changes, mine);
}

}  // namespace detail

template <class T, class Input>
void generate(T* out, std::size_t n, const Input& input, cudaStream_t stream) {
  if (n == 0) return;
  detail::generate_kernel<<<detail::kGenerateBlocks, detail::kGenerateThreads, 0, stream>>>(out, n,
                                                                                            input);
  CUDA_CHECK_LAUNCH();
}

// Adds to *changes, on the stream, how many of data[0, n) differ from the
// input's values.
template <class T, class Input>
void queue_count_changes(const T* data, std::size_t n, const Input& input,
                         unsigned long long* changes, cudaStream_t stream) {
  if (n == 0) return;
  detail::count_changes_kernel<<<detail::kGenerateBlocks, detail::kGenerateThreads, 0, stream>>>(
      data, n, input, changes);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab
