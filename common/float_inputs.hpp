// Seeded, counter-based float inputs for the max labs; element i is a pure
// function of (pattern, seed, n, i), as for the int inputs (int_inputs.hpp).
// Each pattern targets a classic mistake: an identity of 0 (all negative), of
// -FLT_MAX (all -inf), NaN dropped by fmaxf, the order of signed zeros.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "host_device.hpp"
#include "int_inputs.hpp"  // mix64

namespace lab {

// Values are multiples of 1/1024 below 1024 in magnitude: exactly representable,
// so the GPU's generator (where the compiler may fuse a multiply and an add) and
// the CPU's reference produce the same bits.
enum class FloatPattern : int {
  kRandom,         // uniform in [-1024, 1024)
  kAllNegative,    // uniform in [-1025, -1)
  kPosInf,         // random, one +inf
  kNegInf,         // random, one -inf
  kAllNegInf,      // every element -inf: the max is -inf
  kNaN,            // random, one NaN: the max is NaN
  kSignedZeros,    // -0.0 and +0.0 mixed, at least one +0.0: the max is +0.0
  kNegativeZeros,  // every element -0.0: the max is -0.0
  kAscending,      // element i is i: every block's max sits in its last threads, so
                   // it must travel the whole tree (a missing barrier loses it)
};

inline const char* pattern_name(FloatPattern p) {
  switch (p) {
    case FloatPattern::kRandom: return "random";
    case FloatPattern::kAllNegative: return "all_negative";
    case FloatPattern::kPosInf: return "plus_inf";
    case FloatPattern::kNegInf: return "minus_inf";
    case FloatPattern::kAllNegInf: return "all_minus_inf";
    case FloatPattern::kNaN: return "nan";
    case FloatPattern::kSignedZeros: return "signed_zeros";
    case FloatPattern::kNegativeZeros: return "negative_zeros";
    case FloatPattern::kAscending: return "ascending";
  }
  return "?";
}

struct FloatInput {
  FloatPattern pattern = FloatPattern::kRandom;
  std::uint64_t seed = 1;
  std::size_t n = 0;

  // Where the one special element (inf, NaN, +0.0) sits.
  LAB_HOST_DEVICE std::size_t special() const { return n ? mix64(seed ^ 0x5bec1a1) % n : 0; }

  LAB_HOST_DEVICE float at(std::size_t i) const {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const int k = static_cast<int>(h >> 43);                          // 21 random bits
    const float value = static_cast<float>(k - (1 << 20)) / 1024.0f;  // exact
    switch (pattern) {
      case FloatPattern::kAllNegative: return -1.0f - static_cast<float>(k) / 2048.0f;  // exact
      case FloatPattern::kAllNegInf: return -INFINITY;
      case FloatPattern::kNegativeZeros: return -0.0f;
      case FloatPattern::kAscending: return static_cast<float>(i);  // one rounding, same everywhere
      case FloatPattern::kSignedZeros: return (i == special() || (h & 1)) ? 0.0f : -0.0f;
      default: break;
    }
    if (i == special()) {
      if (pattern == FloatPattern::kPosInf) return INFINITY;
      if (pattern == FloatPattern::kNegInf) return -INFINITY;
      if (pattern == FloatPattern::kNaN) return NAN;
    }
    return value;
  }
};

// max_op over the whole input, on all CPU cores; -inf for n == 0.
float reference_max(const FloatInput& input);

}  // namespace lab
