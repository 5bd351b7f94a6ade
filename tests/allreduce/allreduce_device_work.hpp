// The checker's own GPU work for lab 12's cases, on the current device:
// filling inputs from allreduce_inputs.cuh's hash, poisoning outputs, and
// checking a large output where it lies. Behind plain functions because that
// header defines its kernel in place, and can be compiled into one file only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lab::test::allreduce {

// Input i of GPU `rank` (allreduce_inputs.cuh's input_value), on the host.
float input_at(std::uint64_t seed, int rank, std::size_t i);

// Kernels on the current device's legacy stream; they return once queued.
void fill_input(float* in, std::size_t n, std::uint64_t seed, int rank);
void fill_words(std::uint32_t* p, std::size_t n, std::uint32_t value);

// How many of out[0, n) are not the rank-order sum of `gpus` inputs of `seed`,
// and the first of them; `counters` is two words of the current device's memory.
struct WrongCount {
  unsigned long long count = 0, first = 0;
};
WrongCount count_wrong(const float* out, std::size_t n, std::uint64_t seed, int gpus,
                       unsigned long long* counters);

// Queues a check of kSampled elements of out[0, n), at places drawn from
// `pick`, which adds to *counter the number that are not the rank-order sum.
// Cheap enough to run inside a timed batch (count_wrong reads every element).
inline constexpr unsigned kSampled = 4096;
void count_wrong_sampled(const float* out, std::size_t n, std::uint64_t seed, int gpus,
                         std::uint64_t pick, unsigned long long* counter);

}  // namespace lab::test::allreduce
