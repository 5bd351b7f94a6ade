// Lab 01's contract (cpu_sum_contract.hpp), called by Fn.
#include <stdexcept>
#include <string>

#include "cpu_sum_contract.hpp"
#include "direct_calls.hpp"

namespace lab::test::direct {

std::size_t workspace_bytes(Fn, std::uint32_t, std::size_t) { return 0; }

void invoke(const Invocation& c, void*) {
  const int* in = static_cast<const int*>(c.in);
  int result = 0;
  switch (c.fn) {
    case Fn::kCpuSequential: result = sum_sequential(in, c.n); break;
    case Fn::kCpuPairwise: result = sum_pairwise(in, c.n, static_cast<int*>(c.scratch)); break;
    case Fn::kCpuThreads: result = sum_threads(in, c.n, c.arg); break;
    default: throw std::invalid_argument(std::string("lab 01 has no ") + fn_name(c.fn));
  }
  *static_cast<int*>(c.out) = result;
}

void invoke_ranks(const Invocation*, void* const*, std::uint32_t, std::uint32_t) {
  throw std::invalid_argument("lab 01 has no all-reduce");
}

bool todo_reached() { return false; }  // lab 01's TODOs throw NotImplemented instead

}  // namespace lab::test::direct
