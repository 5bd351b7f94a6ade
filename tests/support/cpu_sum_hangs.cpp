// A lab 01 submission whose every function that gets work never returns: the
// runner of tests/hang_budget_check.py, which checks how many hung calls a
// checker makes before it runs nothing more (--max-timeouts).
#include <atomic>
#include <cstddef>

#include "cpu_sum_contract.hpp"

namespace {
std::atomic<bool> g_forever{true};  // never cleared: the loop cannot be optimised away

int spin(std::size_t n) {
  if (n == 0) return 0;  // the empty input is answered, as a real endless loop over n would
  while (g_forever.load(std::memory_order_relaxed)) {
  }
  return 0;
}
}  // namespace

int sum_sequential(const int*, std::size_t n) { return spin(n); }
int sum_pairwise(const int*, std::size_t n, int*) { return spin(n); }
int sum_threads(const int*, std::size_t n, unsigned) { return spin(n); }
