// Lab 01: CPU baseline. The handout is README.md in this folder.
//
// Three ways to add n ints on the CPU, each the starting point of something
// the GPU labs do: one loop (the work a reduction must do: n - 1 additions),
// pairwise halving (the reduction tree: the same additions in log2(n) rounds),
// and threads (the tree's first level spread over cores).
//
// Only the fenced regions are yours; the grader restores everything else.
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

#include "cpu_sum_contract.hpp"
#include "not_implemented.hpp"

int sum_sequential(const int* in, std::size_t n) {
  // ---- your code here (sum_sequential) ----
  int total = 0;
  for (std::size_t i = 0; i < n; ++i) total += in[i];
  return total;
  // ---- end ----
}

namespace {

// Adds the upper half of data[0, size) onto the lower half, then does the same
// to the lower half, until one element holds the sum.
int halve_in_place(int* data, std::size_t size) {
  // ---- your code here (halve_in_place) ----
  if (size == 1) return data[0];
  const std::size_t half = size / 2;
  for (std::size_t i = 0; i < half; ++i) data[i] += data[i + half];
  // An odd size leaves data[size - 1] without a partner: carry it over, or
  // it is lost (the textbook version loses it).
  if (size % 2 == 1) data[0] += data[size - 1];
  return halve_in_place(data, half);
  // ---- end ----
}

}  // namespace

int sum_pairwise(const int* in, std::size_t n, int* scratch) {
  if (n == 0) return 0;
  std::copy(in, in + n, scratch);  // The contract leaves the input unchanged.
  return halve_in_place(scratch, n);
}

int sum_threads(const int* in, std::size_t n, unsigned threads) {
  // ---- your code here (sum_threads) ----
  std::vector<int> partial(threads, 0);
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(n, t * chunk);
    const std::size_t end = std::min(n, begin + chunk);
    pool.emplace_back([=, &partial] { partial[t] = sum_sequential(in + begin, end - begin); });
  }
  for (std::thread& th : pool) th.join();
  int total = 0;
  for (const int p : partial) total += p;
  return total;
  // ---- end ----
}
