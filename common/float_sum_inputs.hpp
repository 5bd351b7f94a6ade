// Hard inputs for float summation (lab 11), counter-based like the others,
// with an exact reference. Every value is built from its bits (a sign, an
// exponent, a 24-bit significand), so host and device agree to the bit, and
// every value is a multiple of 2^-44 below 2^24 in magnitude, so the CPU sums
// them exactly in 128-bit fixed point.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "host_device.hpp"
#include "int_inputs.hpp"  // mix64

namespace lab {

enum class SumPattern : int {
  kSmallIntegers,  // integers in [-100, 100]: every method is exact (for edge sizes)
  kWideSorted,     // magnitudes from 2^-20 to 2^20, ascending, random signs
  kWideShuffled,   // the same values in a shuffled order (n a power of two)
  kCancellation,   // every eighth value large, its negative n/2 later; small values between
};

inline const char* pattern_name(SumPattern p) {
  switch (p) {
    case SumPattern::kSmallIntegers: return "small_integers";
    case SumPattern::kWideSorted: return "wide_sorted";
    case SumPattern::kWideShuffled: return "wide_shuffled";
    case SumPattern::kCancellation: return "cancellation";
  }
  return "?";
}

LAB_HOST_DEVICE inline float float_from_parts(bool negative, int exponent, std::uint32_t frac23) {
  const std::uint32_t bits = (negative ? 0x80000000u : 0u) |
                             (static_cast<std::uint32_t>(exponent + 127) << 23) |
                             (frac23 & 0x7fffffu);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

struct SumInput {
  SumPattern pattern = SumPattern::kWideSorted;
  std::uint64_t seed = 1;
  std::size_t n = 0;

  LAB_HOST_DEVICE float at(std::size_t i) const {
    if (pattern == SumPattern::kSmallIntegers)
      return static_cast<float>(static_cast<int>(mix64(seed ^ mix64(i)) % 201) - 100);
    if (pattern == SumPattern::kCancellation) {
      // Every eighth element (i mod 8 == 7) of the first 2h is large, L in
      // [2^20, 2^21), and x[i + h] == -x[i] (h: n/2 rounded down to a
      // multiple of 8), so the large values cancel exactly; the rest are small
      // values in [2^-6, 2^-5), which are the whole sum. Built against lab
      // 11's kernel (float4 loads, each thread's vectors 1024 apart): an odd
      // thread reads three small values, then a large one, again and again.
      // A float accumulator rounds away every small value that follows a
      // large one. Kahan's original step, which assumes |s| >= |x|, loses the
      // three small values met before the first large one. Partners are n/2
      // apart, in other blocks: they meet only at the top of the tree, after
      // the small values are gone, in the pairwise tree too. (The previous
      // layout, first and last eighths large, stopped testing Kahan's step
      // once each block read one contiguous share.)
      const std::size_t h = n / 2 / 8 * 8;
      if (i % 8 == 7 && i < 2 * h) {
        const bool second = i >= h;
        const std::size_t k = second ? i - h : i;
        return float_from_parts(second, 20, static_cast<std::uint32_t>(mix64(seed ^ mix64(k))));
      }
      return float_from_parts(false, -6, static_cast<std::uint32_t>(mix64(~seed ^ mix64(i))));
    }
    std::size_t j = i;
    if (pattern == SumPattern::kWideShuffled) {
      // A bijection of [0, n) for n a power of two: odd multiplier, offset.
      j = (i * 0x9e3779b97f4a7c15ull + seed) & (n - 1);
    }
    const std::uint64_t h = mix64(seed ^ mix64(j));
    // Exponent rises with j: magnitudes ascend from 2^-20 to 2^20.
    const int exponent = n > 1 ? -20 + static_cast<int>((40 * j) / (n - 1)) : 0;
    return float_from_parts((h >> 63) != 0, exponent, static_cast<std::uint32_t>(h));
  }
};

inline constexpr int kFixedPointBits = 44;

// One value in units of 2^-44 (128-bit fixed point), exact for any multiple of
// 2^-44 below 2^24 (every input here). Host and device: the checker sums large
// inputs on the GPU with this same function (tests/support/device_reference.cuh).
LAB_HOST_DEVICE inline __int128 to_fixed(float v) {
  int exponent = 0;
  const double m = frexp(static_cast<double>(v), &exponent);  // v = m * 2^exponent
  // |m| < 1, so the 24-bit significand fits a 64-bit integer exactly.
  const __int128 significand = static_cast<long long>(ldexp(m, 53));
  const int shift = exponent - 53 + kFixedPointBits;
  return shift >= 0 ? significand << shift : significand >> -shift;
}

// The exact sum in those units, on all CPU cores.
__int128 exact_sum_fixed(const SumInput& input);

// The exact sum rounded to double, and a float result's error against it:
// absolute, and in ulps of the exact sum (the spacing of floats there,
// 2^(e-23) for 2^e <= |sum| < 2^(e+1); at most 0.5 is correctly rounded).
double fixed_to_double(__int128 v);
double error_of(float got, __int128 exact);
double ulps_of(float got, __int128 exact);

}  // namespace lab
