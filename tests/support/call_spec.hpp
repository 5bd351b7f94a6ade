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
};

const char* fn_name(Fn fn);

// One call. Pointers are the caller's: the checker's own mappings of shared
// memory, which the runner link translates into the runner's.
struct Invocation {
  Fn fn = Fn::kSum;
  std::uint32_t arg = 0;     // threads (kCpuThreads), method (kFloatSum)
  std::uint32_t stream = 0;  // 0 or 1: calls on different streams may overlap
  std::size_t n = 0;
  const void* in = nullptr;
  void* out = nullptr;      // GPU: *out; CPU: the int the function returns is stored here
  void* scratch = nullptr;  // GPU: the workspace; lab 01's pairwise sum: its scratch
};

}  // namespace lab::test
