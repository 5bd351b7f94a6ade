// The draw of lab 11's accuracy tests (tests/float_sum_tests.cu): a seed whose
// exact total is far enough from 0 for a relative limit to mean something.
//
// The compensated and double methods must come within 2^-22 of the exact
// total, relative. A compensated sum has an absolute error of its own before
// its last rounding: about 1e-5 to 3e-5 on wide_shuffled at 2^24 elements
// (its compensations are summed in float: tests/tuning/accuracy_draw_sim.py,
// a model of it). Near a total of 0 the limit shrinks below that: under a
// total of about 200 (the model's three draws: 50 to 180), a correct sum could
// fail by the luck of the draw, a few times in 10^7 draws (totals spread over
// about +-6e8). So a draw whose total is under kMinTotal in magnitude is drawn
// again, with the next seed. 2^16 leaves the limit at 2^-6 or more, hundreds
// of times that error. wide_sorted and wide_shuffled share a seed and a total,
// so they are drawn again together. cancellation's total is its small values,
// all positive and each at least 2^-6: (n - n/8) 2^-6 >= 229,376 at 2^24
// elements, never drawn again.
#pragma once

#include <cstdint>

#include "float_sum_inputs.hpp"

namespace lab::test {

inline constexpr double kMinTotal = 0x1p16;

struct AccuracyDraw {
  std::uint64_t seed = 0;
  __int128 exact = 0;
  int redraws = 0;  // seeds passed over
};

// seed_of(k): the k-th candidate seed (k = 0 is the case's own).
template <class SeedOf>
AccuracyDraw accuracy_draw(SumPattern pattern, std::size_t n, SeedOf seed_of) {
  constexpr __int128 kMinFixed = static_cast<__int128>(kMinTotal) << kFixedPointBits;
  AccuracyDraw d;
  for (;; ++d.redraws) {
    d.seed = seed_of(static_cast<std::uint64_t>(d.redraws));
    d.exact = exact_sum_fixed(SumInput{pattern, d.seed, n});
    if (d.exact >= kMinFixed || d.exact <= -kMinFixed) return d;
  }
}

}  // namespace lab::test
