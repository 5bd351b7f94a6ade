// accuracy_draw.hpp on the host: every draw it returns has a total of at
// least kMinTotal in magnitude, a draw already that far from 0 is kept as it
// is, and cancellation (lab 11's input that catches the compensation mutants)
// is never drawn again.
#include <gtest/gtest.h>

#include <cmath>

#include "accuracy_draw.hpp"
#include "int_inputs.hpp"  // mix64

namespace lab::test {
namespace {

double total_of(__int128 fixed) { return std::ldexp(static_cast<double>(fixed), -kFixedPointBits); }

// At 1,024 elements a wide total lies within 2^16 of 0 about once in 80
// draws: 2,000 bases take the redraw path many times.
TEST(AccuracyDraw, EveryTotalIsFarFromZeroAndFarDrawsAreKept) {
  constexpr std::size_t n = 1024;
  int redrawn = 0;
  for (std::uint64_t base = 0; base < 2000; ++base) {
    const auto seed_of = [&](std::uint64_t k) { return mix64(base * 1000003 + k); };
    const AccuracyDraw d = accuracy_draw(SumPattern::kWideSorted, n, seed_of);
    const __int128 first = exact_sum_fixed(SumInput{SumPattern::kWideSorted, seed_of(0), n});
    ASSERT_GE(std::fabs(total_of(d.exact)), kMinTotal) << "base " << base;
    ASSERT_EQ(d.exact, exact_sum_fixed(SumInput{SumPattern::kWideShuffled, d.seed, n}))
        << "wide_shuffled is the same values in another order: one total";
    if (std::fabs(total_of(first)) >= kMinTotal) {
      ASSERT_EQ(d.redraws, 0) << "base " << base;
      ASSERT_EQ(d.seed, seed_of(0));
    } else {
      ASSERT_GT(d.redraws, 0) << "base " << base;
      ++redrawn;
    }
  }
  std::printf("2000 draws at n = %zu: %d drawn again\n", n, redrawn);
  EXPECT_GT(redrawn, 5) << "the redraw path must run in this test";
}

TEST(AccuracyDraw, CancellationIsNeverDrawnAgain) {
  constexpr std::size_t n = std::size_t{1} << 24;  // the accuracy tests' size
  static_assert((n - n / 8) * 0x1p-6 >= kMinTotal, "small values alone reach kMinTotal");
  for (std::uint64_t base = 0; base < 2; ++base) {
    const AccuracyDraw d = accuracy_draw(SumPattern::kCancellation, n,
                                         [&](std::uint64_t k) { return mix64(base + 7 * k); });
    EXPECT_EQ(d.redraws, 0);
    EXPECT_GE(total_of(d.exact), (n - n / 8) * 0x1p-6);
  }
}

}  // namespace
}  // namespace lab::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
