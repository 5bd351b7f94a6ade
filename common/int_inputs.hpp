// Seeded, counter-based int inputs for the sum labs.
//
// Element i is a pure function of (pattern, seed, n, i), so the GPU can write an
// input of 2^32 elements in milliseconds, the CPU can compute the exact sum of the
// same input without storing it, and a test can check that the input was left
// unchanged without copying it back.
//
// Overflow: values are bounded by int_magnitude_bound(n), so |any partial sum| is
// at most n * bound <= INT_MAX for n <= INT_MAX. Above INT_MAX elements only the
// random pattern is used: its sum is a random walk, far inside int (a test checks
// the exact 64-bit sum before using it). Zero never occurs: a kernel that writes
// nothing, or skips an element, cannot pass by luck.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "host_device.hpp"

namespace lab {

enum class IntPattern : int {
  kRandom,       // uniform in [-bound, -1] U [1, bound]
  kConstant,     // every element 1: the expected sum is n, easy to read in a failure
  kAlternating,  // +a, -b, +c, ...: signs alternate, magnitudes random
};

inline const char* pattern_name(IntPattern p) {
  switch (p) {
    case IntPattern::kRandom: return "random";
    case IntPattern::kConstant: return "constant";
    case IntPattern::kAlternating: return "alternating";
  }
  return "?";
}

LAB_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t x) {
  // splitmix64's finaliser: consecutive counters give independent-looking words.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

LAB_HOST_DEVICE inline int int_magnitude_bound(std::size_t n) {
  if (n <= static_cast<std::size_t>(INT_MAX) / 1000) return 1000;
  if (n >= static_cast<std::size_t>(INT_MAX)) return 1;
  return static_cast<int>(static_cast<std::size_t>(INT_MAX) / n);
}

inline constexpr IntPattern kIntPatterns[] = {IntPattern::kRandom, IntPattern::kConstant,
                                              IntPattern::kAlternating};

// Patterns other than random cannot keep the sum inside int above INT_MAX elements.
inline bool int_pattern_allowed(IntPattern p, std::size_t n) {
  return p == IntPattern::kRandom || n <= static_cast<std::size_t>(INT_MAX);
}

struct IntInput {
  IntPattern pattern = IntPattern::kRandom;
  std::uint64_t seed = 1;
  std::size_t n = 0;

  LAB_HOST_DEVICE int at(std::size_t i) const {
    const int bound = int_magnitude_bound(n);
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const int magnitude = 1 + static_cast<int>(h % static_cast<std::uint64_t>(bound));
    switch (pattern) {
      case IntPattern::kConstant: return 1;
      case IntPattern::kAlternating: return (i % 2 == 0) ? magnitude : -magnitude;
      case IntPattern::kRandom:
      default: return ((h >> 63) != 0) ? magnitude : -magnitude;
    }
  }
};

// A value that may replace one element of the input without letting any
// partial sum overflow (the same bound as the input's own values), drawn from
// 64 random bits; never zero.
inline int int_value_in_bounds(std::size_t n, std::uint64_t bits) {
  const int bound = int_magnitude_bound(n);
  const int magnitude = 1 + static_cast<int>((bits >> 1) % static_cast<std::uint64_t>(bound));
  return (bits & 1) ? magnitude : -magnitude;
}

// Exact sum of the input, on all CPU cores (used as the reference for every size).
std::int64_t reference_sum(const IntInput& input);

}  // namespace lab
