// seeded_sizes (sum_sizes.hpp) on the host: on every seed, one size in each
// band of the range, smallest first. So a bug that shows only above (or only
// within) some band meets a size there on every seed, as lab 01's sum off by
// one above n = 1000 did on 6 seeds of 3,000 when the sizes were drawn anywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "sum_sizes.hpp"

namespace lab::test {
namespace {

TEST(SeededSizes, OneInEachBandSmallestFirst) {
  // SeededRandomSizes of lab 01 and of the GPU contracts.
  for (const auto& [count, max_log2] : {std::pair{8, 22.0}, std::pair{12, 24.0}}) {
    for (std::uint64_t seed = 0; seed < 10000; ++seed) {
      std::mt19937_64 rng(seed);
      const std::vector<std::size_t> sizes = seeded_sizes(rng, count, max_log2);
      ASSERT_EQ(sizes.size(), static_cast<std::size_t>(count));
      for (int k = 0; k < count; ++k) {
        const double lo = std::exp2(k * max_log2 / count);
        const double hi = std::exp2((k + 1) * max_log2 / count);
        ASSERT_GE(static_cast<double>(sizes[k]), std::floor(lo) + 1)
            << "seed " << seed << ", band " << k << " of " << count;
        ASSERT_LE(static_cast<double>(sizes[k]), hi + 1)
            << "seed " << seed << ", band " << k << " of " << count;
      }
    }
  }
}

TEST(SeededSizes, TheSeedChoosesTheSizes) {
  std::mt19937_64 a(1), b(1), c(2);
  EXPECT_EQ(seeded_sizes(a, 12, 24.0), seeded_sizes(b, 12, 24.0)) << "a seed replays its sizes";
  std::mt19937_64 d(1);
  EXPECT_NE(seeded_sizes(c, 12, 24.0), seeded_sizes(d, 12, 24.0));
}

}  // namespace
}  // namespace lab::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
