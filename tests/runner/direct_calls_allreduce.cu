// Lab 12's contract (allreduce_contract.cuh), called by Fn: the runner of the
// all-reduce. The checker sends one record per rank; this turns them into the
// AllreduceRank array the lab's code takes.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "allreduce_contract.cuh"
#include "cuda_check.cuh"
#include "direct_calls.hpp"

namespace lab::test::direct {
namespace {
[[noreturn]] void unsupported(Fn fn) {
  throw std::invalid_argument(std::string("lab 12 has no ") + fn_name(fn));
}

// The lab's own refusal of a bad argument, told apart from a request the
// runner could not serve (which std::invalid_argument means to runner_main).
class Refused : public std::runtime_error {
 public:
  explicit Refused(const std::string& what)
      : std::runtime_error("std::invalid_argument: " + what) {}
};
}  // namespace

std::size_t workspace_bytes(Fn fn, std::uint32_t gpus, std::size_t n) {
  if (fn != Fn::kAllreduce) unsupported(fn);
  try {
    return allreduce_workspace_bytes(n, static_cast<int>(gpus));
  } catch (const std::invalid_argument& e) {
    throw Refused(e.what());
  }
}

void invoke(const Invocation& c, void*) { unsupported(c.fn); }

void invoke_ranks(const Invocation* calls, void* const* streams, std::uint32_t count,
                  std::uint32_t gpus) {
  if (count == 0 || calls[0].fn != Fn::kAllreduce) unsupported(calls[0].fn);
  // As long as the count the lab's code is told, so that code which trusts a
  // bad count reads blank ranks of this array, never past its end.
  std::vector<AllreduceRank> ranks(std::max<std::size_t>(count, gpus));
  for (std::uint32_t r = 0; r < count; ++r) {
    ranks[r].device = static_cast<int>(calls[r].device);
    ranks[r].in = static_cast<const float*>(calls[r].in);
    ranks[r].out = static_cast<float*>(calls[r].out);
    ranks[r].workspace = calls[r].scratch;
    ranks[r].stream = static_cast<cudaStream_t>(streams[r]);
  }
  try {
    allreduce_sum(ranks.data(), static_cast<int>(gpus), calls[0].n,
                  static_cast<AllreduceAlgorithm>(calls[0].arg));
  } catch (const std::invalid_argument& e) {
    throw Refused(e.what());
  }
}

bool todo_reached() {
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag, lab_todo_flag_address(), sizeof flag, cudaMemcpyDeviceToHost));
  return flag != 0;
}

}  // namespace lab::test::direct
