// Sizes every sum lab is tested at (DESIGN.md): edges of warps, blocks and
// two-element blocks, powers of two and their neighbours, a large prime.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
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

// Above 2^32 elements: a 32-bit index (int or unsigned) wraps for some thread.
inline constexpr std::size_t kHugeSize = (std::size_t{1} << 32) + (std::size_t{1} << 20) + 7;

}  // namespace lab::test
