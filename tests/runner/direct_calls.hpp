// Calling a lab's contract functions in this process, by Fn: what the runner
// does for each request, and what the benchmarks do with the reference
// solutions. Compiled once per contract kind, with the functions that kind
// has (LAB_HAS_CPU_SUM, LAB_HAS_SUM, LAB_HAS_MAX, LAB_HAS_FLOAT_SUM; lab 12's
// all-reduce: direct_calls_allreduce.cu); a call to another function throws
// std::invalid_argument.
#pragma once

#include <cstddef>
#include <cstdint>

#include "call_spec.hpp"

namespace lab::test::direct {

// Workspace bytes the lab's code asks for (0 for lab 01's functions).
std::size_t workspace_bytes(Fn fn, std::uint32_t arg, std::size_t n);

// One call. GPU functions are queued on `stream` (a cudaStream_t) and return
// at once; lab 01's functions run to the end and store their result in *out.
void invoke(const Invocation& c, void* stream);

// A call over several GPUs (lab 12's kAllreduce): ranks[r] runs on
// streams[r] (a cudaStream_t of ranks[r].device); `gpus` is the count the lab's
// code is told. Kinds without one throw std::invalid_argument.
void invoke_ranks(const Invocation* ranks, void* const* streams, std::uint32_t count,
                  std::uint32_t gpus);

// GPU kinds: true once a kernel still containing the skeleton's LAB_TODO() ran
// (on the current device).
bool todo_reached();

}  // namespace lab::test::direct
