#include "allreduce_device_work.hpp"

#include <cuda_runtime.h>

#include "allreduce_inputs.cuh"
#include "cuda_check.cuh"

namespace lab::test::allreduce {
namespace {

__global__ void fill_words_kernel(std::uint32_t* p, std::size_t n, std::uint32_t value) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = value;
}

// Adds in rank order, as the host does: float additions only, so the bits agree.
__global__ void count_wrong_kernel(const float* out, std::size_t n, std::uint64_t seed, int gpus,
                                   unsigned long long* counters) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    float sum = lab::allreduce::input_value(seed, 0, i);
    for (int h = 1; h < gpus; ++h) sum += lab::allreduce::input_value(seed, h, i);
    if (__float_as_uint(sum) != __float_as_uint(out[i])) {
      atomicAdd(&counters[0], 1ull);
      atomicMin(&counters[1], static_cast<unsigned long long>(i));
    }
  }
}

// Thread t checks element hash(pick, t) mod n: places the runner cannot know.
__global__ void count_wrong_sampled_kernel(const float* out, std::size_t n, std::uint64_t seed,
                                           int gpus, std::uint64_t pick,
                                           unsigned long long* counter) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= kSampled) return;
  const std::size_t i = static_cast<std::size_t>(
      lab::allreduce::mix64(pick + 0x9E3779B97F4A7C15ull * (t + 1ull)) % n);
  float sum = lab::allreduce::input_value(seed, 0, i);
  for (int h = 1; h < gpus; ++h) sum += lab::allreduce::input_value(seed, h, i);
  if (__float_as_uint(sum) != __float_as_uint(out[i])) atomicAdd(counter, 1ull);
}

constexpr int kBlocks = 1024, kThreads = 256;

}  // namespace

float input_at(std::uint64_t seed, int rank, std::size_t i) {
  return lab::allreduce::input_value(seed, rank, i);
}

void fill_input(float* in, std::size_t n, std::uint64_t seed, int rank) {
  lab::allreduce::fill_inputs<<<kBlocks, kThreads>>>(in, n, seed, rank);
  CUDA_CHECK_LAUNCH();
}

void fill_words(std::uint32_t* p, std::size_t n, std::uint32_t value) {
  fill_words_kernel<<<kBlocks, kThreads>>>(p, n, value);
  CUDA_CHECK_LAUNCH();
}

WrongCount count_wrong(const float* out, std::size_t n, std::uint64_t seed, int gpus,
                       unsigned long long* counters) {
  const unsigned long long start[2] = {0, ~0ull};
  CUDA_CHECK(cudaMemcpy(counters, start, sizeof start, cudaMemcpyHostToDevice));
  count_wrong_kernel<<<kBlocks, kThreads>>>(out, n, seed, gpus, counters);
  CUDA_CHECK_LAUNCH();
  unsigned long long found[2] = {};
  CUDA_CHECK(cudaMemcpy(found, counters, sizeof found, cudaMemcpyDeviceToHost));
  return {found[0], found[1]};
}

void count_wrong_sampled(const float* out, std::size_t n, std::uint64_t seed, int gpus,
                         std::uint64_t pick, unsigned long long* counter) {
  count_wrong_sampled_kernel<<<(kSampled + kThreads - 1) / kThreads, kThreads>>>(out, n, seed, gpus,
                                                                                 pick, counter);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab::test::allreduce
