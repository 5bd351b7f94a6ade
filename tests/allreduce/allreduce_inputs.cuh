// Lab 12's inputs, the same on host and device: the tests and the bench fill
// each GPU's buffer on the GPU and compute what every output must hold on the
// host, from the same function, with no input copied across.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lab::allreduce {

// SplitMix64's finaliser: every bit of x stirred into every bit of the result.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Input i of GPU `rank`: (k - 2^22 + 0.5) / 2^22 for a 23-bit hash k, so in
// (-1, 1), never 0, and exact in float on host and device alike: both sides
// add the very same floats, and a rank-order sum has one right answer, bits
// and all.
__host__ __device__ inline float input_value(std::uint64_t seed, int rank, std::size_t i) {
  const std::uint64_t x =
      mix64(seed + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(rank) + 1) +
            0xD1B54A32D192ED03ull * i);
  const int k = static_cast<int>(x >> 41);  // 23 bits
  return (static_cast<float>(k - (1 << 22)) + 0.5f) / 4194304.0f;
}

// What every GPU's output holds at i: the inputs added in rank order.
inline float rank_order_sum(std::uint64_t seed, int gpus, std::size_t i) {
  float sum = input_value(seed, 0, i);
  for (int h = 1; h < gpus; ++h) sum += input_value(seed, h, i);
  return sum;
}

__global__ void fill_inputs(float* in, std::size_t n, std::uint64_t seed, int rank) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    in[i] = input_value(seed, rank, i);
}

}  // namespace lab::allreduce
