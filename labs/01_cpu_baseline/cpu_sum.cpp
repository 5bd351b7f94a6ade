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
  // TODO: add in[0] .. in[n-1] in one loop and return the total (0 when n == 0).
  LAB_TODO_HOST("sum_sequential");
  // ---- end ----
}

namespace {

// Adds the upper half of data[0, size) onto the lower half, then does the same
// to the lower half, until one element holds the sum.
int halve_in_place(int* data, std::size_t size) {
  // ---- your code here (halve_in_place) ----
  // TODO: return the sum of data[0, size), pairing the first half with the
  // second and recursing on half as many elements (the handout's "halving"
  // picture). Trap the tests check: an odd size leaves one element without a
  // partner, and a sum that loses it is wrong only for odd sizes.
  LAB_TODO_HOST("halve_in_place");
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
  // TODO: return the sum of in[0, n) computed by `threads` std::threads at once,
  // each on a part of the input (the handout says how to split and combine).
  // Traps the tests check: every element counted exactly once, also when n is
  // smaller than `threads` or not a multiple of it; nothing shared is written
  // by two threads at once.
  LAB_TODO_HOST("sum_threads");
  // ---- end ----
}
