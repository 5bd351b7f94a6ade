// The rule every timed call's answer is checked by (each contract's
// same_timed, contracts.cuh), on the host: no GPU. A test of the harness, not
// of a lab: lab 11's rule must pass the reference solution whatever the seed
// draws (docs/decisions.md, "Lab 11's timed answers"), and must still fail a
// remembered answer.
#include <gtest/gtest.h>

#include <cmath>

#include "contracts.cuh"

namespace lab::test {
namespace {

// The replay of run seed 400107 on an H100 (lab11_timed_rule.sh): its ninth
// timed call summed a copy whose exact total is -55,067.59, and
// the reference's naive sum returned -55,648 (the bits the CPU emulation,
// tests/tuning/lab11_timed_sums.cpp, predicted: an error of 580).
constexpr float kExpected = -55067.5859f;
constexpr float kNaiveGot = -55648.0f;
// The least a plant moves a copy's total: a value of 2^23 or more replacing
// one of at most 2^21 of the other sign.
constexpr float kLeastPlant = 0x1p23f - 0x1p21f;

TEST(TimedRule, NaiveSumNearZeroPasses) {
  // The rule before: 2^-8 of the total, 217 here.
  EXPECT_FALSE(NaiveFloatSumTraits::same(kNaiveGot, kExpected));
  EXPECT_TRUE(NaiveFloatSumTraits::same_timed(kNaiveGot, kExpected));
  EXPECT_TRUE(PairwiseFloatSumTraits::same_timed(kNaiveGot, kExpected));
}

TEST(TimedRule, AccurateSumsStayTight) {
  // The compensated sum of that copy erred by 0.001 (the emulation); 8 is
  // their floor, far below the least move of a plant.
  EXPECT_TRUE(KahanFloatSumTraits::same_timed(kExpected + 0.001f, kExpected));
  EXPECT_FALSE(KahanFloatSumTraits::same_timed(kExpected + 16.0f, kExpected));
  EXPECT_FALSE(DoubleFloatSumTraits::same_timed(kNaiveGot, kExpected));
}

TEST(TimedRule, RememberedAnswerStillFails) {
  // The copy's previous answer differs by a plant at least: wherever the
  // total lies below 2^30 (a plain float method's 2^-8 of it is then under
  // the least plant), a stale answer is told apart by every method.
  for (const float total : {0.0f, 1e5f, -55067.5859f, 0x1p23f, -0x1p28f, 0x1p30f - 0x1p24f}) {
    for (const float stale : {total + kLeastPlant, total - kLeastPlant}) {
      EXPECT_FALSE(NaiveFloatSumTraits::same_timed(stale, total)) << total;
      EXPECT_FALSE(PairwiseFloatSumTraits::same_timed(stale, total)) << total;
      EXPECT_FALSE(KahanFloatSumTraits::same_timed(stale, total)) << total;
      EXPECT_FALSE(DoubleFloatSumTraits::same_timed(stale, total)) << total;
    }
  }
}

TEST(TimedRule, ExactContractsKeepTheirRule) {
  EXPECT_TRUE(SumTraits::same_timed(-7, -7));
  EXPECT_FALSE(SumTraits::same_timed(-7, -6));
  EXPECT_TRUE(MaxTraits::same_timed(std::nanf(""), std::nanf("")));
  EXPECT_FALSE(MaxTraits::same_timed(0.0f, -0.0f));
}

TEST(TimedRule, SmallTotalsKeepTheExactRuleOutsideTimedCalls) {
  // The edge-size tests sum small integers exactly: `same` has no floor.
  EXPECT_FALSE(NaiveFloatSumTraits::same(31.0f, 30.0f));
  EXPECT_FALSE(KahanFloatSumTraits::same(-4.0f, -3.0f));
}

}  // namespace
}  // namespace lab::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
