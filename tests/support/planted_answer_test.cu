// Each contract's answer after one element of an input is replaced (its
// replaced(), which the stale-answer check of every lab and every timed call
// trusts: PlantedCopies), against the changed input's answer worked out from
// scratch, on the host: no GPU. A test of the harness, not of a lab: with the
// max's plant below ascending's largest elements, a plant on n = 4097's last
// element made replaced() keep 4096, the element it had just replaced, and a
// correct lab 08 or 09 failed "wrong after one element of the input changed
// between calls" by the draw of the plant's place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "contracts.cuh"
#include "sum_sizes.hpp"

namespace lab::test {
namespace {

constexpr std::uint64_t kSeed = 0x91a47ed;

// At every edge size up to `largest` (and below the device reference's sizes)
// with every pattern: plants on the first element, the last, the middle and
// 29 drawn places, each against the fold of the changed input by `Op`, the
// contract's exact reduction (device_reference.cuh): the fold of the elements
// before it, the plant, and the fold of those after.
template <class C, class Op>
void check_plants(std::size_t largest) {
  using T = typename C::T;
  using A = typename C::Exact;
  for (const std::size_t n : edge_sizes()) {
    if (n > largest || n >= kDeviceReferenceMin) continue;
    for (const auto p : C::patterns()) {
      if (!C::allowed(p, n)) continue;
      const typename C::Input spec = C::input(p, kSeed ^ n, n);
      const A base = C::exact(spec);
      std::vector<A> before(n + 1), after(n + 1);  // folds of [0, i) and [i, n)
      before[0] = after[n] = Op::identity();
      for (std::size_t i = 0; i < n; ++i)
        before[i + 1] = Op::combine(before[i], Op::of(spec.at(i)));
      for (std::size_t i = n; i-- > 0;) after[i] = Op::combine(Op::of(spec.at(i)), after[i + 1]);
      ASSERT_TRUE(C::same(C::expected_of(before[n]), C::expected_of(base)))
          << "n=" << n << " " << pattern_name(p) << ": the fold is not the contract's answer";
      std::mt19937_64 rng(kSeed + n);
      std::vector<std::size_t> places = {0, n - 1, n / 2};
      while (places.size() < 32) places.push_back(static_cast<std::size_t>(rng() % n));
      for (const std::size_t at : places) {
        const T original = spec.at(at);
        const T value = C::plant(rng, spec, original);
        const T said = C::expected_of(C::replaced(base, original, value));
        const T truth =
            C::expected_of(Op::combine(Op::combine(before[at], Op::of(value)), after[at + 1]));
        EXPECT_TRUE(C::same(said, truth))
            << "n=" << n << " " << pattern_name(p) << ", element " << at << " (" << original
            << ") replaced by " << value << ": replaced() says " << said << ", the input's "
            << C::kWhat << " is " << truth;
      }
    }
  }
}

TEST(PlantedAnswer, MaxAtEverySizeAndPlace) {
  std::printf("seed %#llx\n", static_cast<unsigned long long>(kSeed));
  check_plants<MaxTraits, FloatMaximum>(std::size_t{1} << 24);
}

TEST(PlantedAnswer, IntSum) { check_plants<SumTraits, Int64Sum>(65537); }

TEST(PlantedAnswer, FloatSum) { check_plants<KahanFloatSumTraits, Fixed128Sum>(65537); }

// Every finite element of every max input lies below the plant, the property
// replaced() rests on (the +inf and NaN patterns hold one such element).
TEST(PlantedAnswer, MaxPlantAboveEveryFiniteElement) {
  std::mt19937_64 rng(kSeed);
  for (const std::size_t n : {std::size_t{4097}, std::size_t{1} << 20, kHugeSize})
    for (const auto p : MaxTraits::patterns()) {
      const FloatInput spec = MaxTraits::input(p, kSeed, n);
      const float largest_finite = p == FloatPattern::kAscending ? static_cast<float>(n - 1) : 1024;
      for (int k = 0; k < 1000; ++k)
        ASSERT_GT(MaxTraits::plant(rng, spec, 0.0f), largest_finite)
            << "n=" << n << " " << pattern_name(p);
    }
}

}  // namespace
}  // namespace lab::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
