// The GPU contracts (sum_contract.cuh, max_contract.cuh, float_sum_contract.cuh),
// called by Fn. Which of them a lab implements is a compile definition.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "direct_calls.hpp"
#if LAB_HAS_SUM
#include "sum_contract.cuh"
#endif
#if LAB_HAS_MAX
#include "max_contract.cuh"
#endif
#if LAB_HAS_FLOAT_SUM
#include "float_sum_contract.cuh"
#endif

#include "cuda_check.cuh"

// Every GPU lab file defines it (lab_fence.cuh); CUB's peer points at a zero.
void* lab_todo_flag_address();

namespace lab::test::direct {
namespace {
[[noreturn]] void unsupported(Fn fn) {
  throw std::invalid_argument(std::string("this lab has no ") + fn_name(fn));
}
}  // namespace

std::size_t workspace_bytes(Fn fn, std::uint32_t, std::size_t n) {
  switch (fn) {
#if LAB_HAS_SUM
    case Fn::kSum: return sum_workspace_bytes(n);
#endif
#if LAB_HAS_MAX
    case Fn::kMax: return max_workspace_bytes(n);
#endif
#if LAB_HAS_FLOAT_SUM
    case Fn::kFloatSum: return float_sum_workspace_bytes(n);
#endif
    default: unsupported(fn);
  }
}

void invoke(const Invocation& c, void* stream_ptr) {
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  switch (c.fn) {
#if LAB_HAS_SUM
    case Fn::kSum:
      return reduce_sum(static_cast<const int*>(c.in), c.n, static_cast<int*>(c.out), c.scratch,
                        stream);
#endif
#if LAB_HAS_MAX
    case Fn::kMax:
      return reduce_max(static_cast<const float*>(c.in), c.n, static_cast<float*>(c.out), c.scratch,
                        stream);
#endif
#if LAB_HAS_FLOAT_SUM
    case Fn::kFloatSum:
      return reduce_sum_float(static_cast<const float*>(c.in), c.n, static_cast<float*>(c.out),
                              c.scratch, static_cast<FloatSumMethod>(c.arg), stream);
#endif
    default: unsupported(c.fn);
  }
}

void invoke_ranks(const Invocation*, void* const*, std::uint32_t, std::uint32_t) {
  unsupported(Fn::kAllreduce);
}

bool todo_reached() {
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag, lab_todo_flag_address(), sizeof flag, cudaMemcpyDeviceToHost));
  return flag != 0;
}

}  // namespace lab::test::direct
