// The calls a checker can ask of a lab's code, named the same on both sides of
// the checker/runner split (runner_link.hpp, runner_main.cpp): which contract
// function, its extra argument, and where its buffers are.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lab::test {

enum class Fn : std::uint32_t {
  kCpuSequential = 1,  // lab 01: sum_sequential(in, n)
  kCpuPairwise = 2,    // lab 01: sum_pairwise(in, n, scratch)
  kCpuThreads = 3,     // lab 01: sum_threads(in, n, arg threads)
  kSum = 10,           // reduce_sum(in, n, out, workspace, stream)
  kMax = 11,           // reduce_max(in, n, out, workspace, stream)
  kFloatSum = 12,      // reduce_sum_float(in, n, out, workspace, arg method, stream)
  kAllreduce = 20,     // lab 12: allreduce_sum(ranks, gpus, n, arg algorithm); one rank a record
};

const char* fn_name(Fn fn);

// One call. Pointers are the caller's: the checker's own mappings of shared
// memory, which the runner link translates into the runner's.
//
// An all-reduce (kAllreduce) spans GPUs: it is `ranks` consecutive records,
// one per GPU in rank order (in, out, scratch = the workspace, device, stream),
// the first of which carries `ranks` and `gpus` (the count the lab's code is
// told: equal to ranks but for the test of a count it must refuse).
struct Invocation {
  Fn fn = Fn::kSum;
  std::uint32_t arg = 0;     // threads (kCpuThreads), method (kFloatSum), algorithm (kAllreduce)
  std::uint32_t stream = 0;  // 0 or 1: calls on different streams may overlap
  std::uint32_t device = 0;  // the CUDA ordinal the call (or this rank) runs on
  std::uint32_t ranks = 1;   // kAllreduce, first record: records in this call
  std::uint32_t gpus = 0;    // kAllreduce, first record: the gpus argument
  std::size_t n = 0;
  const void* in = nullptr;
  void* out = nullptr;      // GPU: *out; CPU: the int the function returns is stored here
  void* scratch = nullptr;  // GPU: the workspace; lab 01's pairwise sum: its scratch
};

}  // namespace lab::test
