// A GPU contract's calls, made by the checker through its runner: workspace
// sizes, invocations, and the rule that the checker's own GPU work (inputs,
// poison) is finished before the lab's code starts on the same memory.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "call_spec.hpp"
#include "cuda_check.cuh"
#include "device_shared.cuh"
#include "runner_link.hpp"

namespace lab::test {

// The contract leaves the workspace size to the lab; a request beyond this
// (twice the input plus 1 GiB) is refused before any memory is given.
template <class C>
std::size_t max_workspace_bytes(std::size_t n) {
  return (std::size_t{1} << 30) + 2 * n * sizeof(typename C::T);
}

template <class C>
std::size_t workspace_bytes(std::size_t n) {
  return RunnerLink::get().workspace_bytes(C::kFn, C::kArg, n, max_workspace_bytes<C>(n));
}

// A workspace as the contract hands it over (sum_contract.cuh): zeroed once,
// then passed unchanged to every call with this n.
inline DeviceShared<unsigned char> zeroed_workspace(std::size_t bytes, cudaStream_t stream) {
  DeviceShared<unsigned char> workspace(bytes);
  workspace.fill_bytes(0, stream);
  return workspace;
}

template <class C>
DeviceShared<unsigned char> new_workspace(std::size_t n, cudaStream_t stream) {
  return zeroed_workspace(workspace_bytes<C>(n), stream);
}

template <class C>
Invocation call_of(const typename C::T* in, std::size_t n, typename C::T* out, void* workspace,
                   std::uint32_t stream = 0) {
  Invocation c;
  c.fn = C::kFn;
  c.arg = C::kArg;
  c.stream = stream;
  c.n = n;
  c.in = in;
  c.out = out;
  c.scratch = workspace;
  return c;
}

inline void run_remote(const std::vector<Invocation>& calls) {
  CUDA_CHECK(cudaDeviceSynchronize());
  RunnerLink::get().run(calls);
}

}  // namespace lab::test
