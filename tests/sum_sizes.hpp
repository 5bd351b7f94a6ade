// Sizes every sum lab is tested at (DESIGN.md): edges of warps, blocks and
// two-element blocks, powers of two and their neighbours, a large prime.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace lab::test {

inline const std::vector<std::size_t>& edge_sizes() {
  // A table, laid out by hand.
  // clang-format off
  static const std::vector<std::size_t> sizes = {
      1,    2,    31,   32,   33,        255,       256,       257,        511,
      512,  513,  1000, 1023, 1024,      1025,      2049,      4097,       65537,
      1u << 20, (1u << 20) + 1, 10000000, 16777213 /* largest prime below 2^24 */};
  // clang-format on
  return sizes;
}

// One parameterised case: a size and an input pattern of a contract's type.
template <class Pattern>
struct SizeCase {
  std::size_t n;
  Pattern pattern;
};

template <class Pattern>
void PrintTo(const SizeCase<Pattern>& c, std::ostream* os) {
  *os << "n=" << c.n << ", " << pattern_name(c.pattern);
}

// Every edge size with every pattern the contract allows at that size.
template <class C>
std::vector<SizeCase<typename C::Pattern>> edge_cases() {
  std::vector<SizeCase<typename C::Pattern>> cases;
  for (const std::size_t n : edge_sizes())
    for (const auto p : C::patterns())
      if (C::allowed(p, n)) cases.push_back({n, p});
  return cases;
}

// Test names such as MatchesReference/n257_random.
template <class Pattern>
std::string case_name(const ::testing::TestParamInfo<SizeCase<Pattern>>& info) {
  return "n" + std::to_string(info.param.n) + "_" + pattern_name(info.param.pattern);
}

// SeededRandomSizes: `count` sizes drawn log-uniformly, one from each of
// `count` equal bands of [0, max_log2] in turn, so smallest first (the first
// failure is at the smallest size drawn). Drawn anywhere in the range, a band
// went untested on many seeds: lab 01's eight draws in [0, 22] all fell at or
// below n = 1000 on 6 seeds of 3,000, and a sum off by one above 1000 passed;
// twelve draws in [0, 24] miss [2^16, 2^20) on one seed in nine.
inline std::vector<std::size_t> seeded_sizes(std::mt19937_64& rng, int count, double max_log2) {
  std::vector<std::size_t> sizes;
  const double band = max_log2 / count;
  for (int k = 0; k < count; ++k) {
    std::uniform_real_distribution<double> log2n(k * band, (k + 1) * band);
    sizes.push_back(static_cast<std::size_t>(std::exp2(log2n(rng))) + 1);
  }
  return sizes;
}

// Above 2^32 elements: a 32-bit index (int or unsigned) wraps for some thread.
inline constexpr std::size_t kHugeSize = (std::size_t{1} << 32) + (std::size_t{1} << 20) + 7;

}  // namespace lab::test
