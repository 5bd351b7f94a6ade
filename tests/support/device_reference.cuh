// The checker's exact answers for large inputs, computed on the GPU from the
// same counter-based generator that wrote the input (`Input::at`, host and
// device), never from a buffer the lab's code has been given.
//
// Why: the host's references of the 2^32-element case take seconds per case,
// most of each lab's test time, and every core the builds a batch runs beside
// the tests need (docs/decisions.md, "Exact answers of large cases computed on
// the GPU"). On the GPU the same sums take milliseconds.
//
// Exactness does not depend on the order: integer sums (64-bit, and 128-bit
// fixed point for floats) are associative, and max_op is a commutative,
// associative maximum (any NaN gives a NaN; +0.0 beats -0.0 either way round).
// A GPU test (reference_agreement_test.cu) checks these against the host's.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "float_sum_inputs.hpp"
#include "max_op.hpp"

namespace lab::test {

// Below this size the host reference takes under about 10 ms and stays the
// answer (the small cases, and every case on lab 01's CPU-only checker).
inline constexpr std::size_t kDeviceReferenceMin = std::size_t{1} << 24;

struct Int64Sum {
  using Acc = long long;
  static __host__ __device__ Acc identity() { return 0; }
  static __host__ __device__ Acc of(int v) { return v; }
  static __host__ __device__ Acc combine(Acc a, Acc b) { return a + b; }
};

struct FloatMaximum {
  using Acc = float;
  static __host__ __device__ Acc identity() { return -INFINITY; }
  static __host__ __device__ Acc of(float v) { return v; }
  static __host__ __device__ Acc combine(Acc a, Acc b) { return max_op(a, b); }
};

// Each float as an exact multiple of 2^-44 (float_sum_inputs.hpp's to_fixed).
struct Fixed128Sum {
  using Acc = __int128;
  static __host__ __device__ Acc identity() { return 0; }
  static __host__ __device__ Acc of(float v) { return to_fixed(v); }
  static __host__ __device__ Acc combine(Acc a, Acc b) { return a + b; }
};

namespace detail {

constexpr unsigned kReferenceBlocks = 2048;
constexpr unsigned kReferenceThreads = 256;

template <class Op, class Input>
__global__ void reference_kernel(Input input, typename Op::Acc* partials) {
  using Acc = typename Op::Acc;
  __shared__ Acc shared[kReferenceThreads];
  Acc mine = Op::identity();
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < input.n; i += stride)
    mine = Op::combine(mine, Op::of(input.at(i)));
  shared[threadIdx.x] = mine;
  __syncthreads();
  for (unsigned half = kReferenceThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      shared[threadIdx.x] = Op::combine(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

}  // namespace detail

// Op's reduction of input.at(0 .. n-1), on the current device; the block
// partials are combined on the host (2048 of them).
template <class Op, class Input>
typename Op::Acc reduce_on_device(const Input& input) {
  using Acc = typename Op::Acc;
  DeviceBuffer<Acc> partials(detail::kReferenceBlocks);
  detail::reference_kernel<Op>
      <<<detail::kReferenceBlocks, detail::kReferenceThreads>>>(input, partials.get());
  CUDA_CHECK_LAUNCH();
  std::vector<Acc> host(detail::kReferenceBlocks);
  CUDA_CHECK(
      cudaMemcpy(host.data(), partials.get(), host.size() * sizeof(Acc), cudaMemcpyDeviceToHost));
  Acc total = Op::identity();
  for (const Acc& p : host) total = Op::combine(total, p);
  return total;
}

}  // namespace lab::test
