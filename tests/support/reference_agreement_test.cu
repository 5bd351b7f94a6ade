// The checker's GPU references (device_reference.cuh) against its host ones,
// on every input pattern of every contract, at sizes where the checker
// switches to the GPU: a wrong device reference would fail every student's
// large cases, or pass a wrong answer. A test of the harness, not of a lab.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "device_reference.cuh"
#include "float_inputs.hpp"
#include "float_sum_inputs.hpp"
#include "gpu_test_main.hpp"
#include "int_inputs.hpp"

namespace lab::test {
namespace {

// Sizes at and above the switch; odd ones leave a ragged last stride.
constexpr std::size_t kSizes[] = {kDeviceReferenceMin, kDeviceReferenceMin + 7,
                                  3 * kDeviceReferenceMin + 1001};
constexpr std::uint64_t kSeeds[] = {1, 0x9e3779b97f4a7c15ull};

std::string where(const char* pattern, std::size_t n, std::uint64_t seed) {
  return std::string(pattern) + ", n=" + std::to_string(n) + ", seed=" + std::to_string(seed);
}

TEST(DeviceReference, IntSumMatchesHost) {
  for (const IntPattern p : kIntPatterns)
    for (const std::size_t n : kSizes)
      for (const std::uint64_t seed : kSeeds) {
        const IntInput in{p, seed, n};
        EXPECT_EQ(reduce_on_device<Int64Sum>(in), reference_sum(in))
            << where(pattern_name(p), n, seed);
      }
}

TEST(DeviceReference, FloatMaxMatchesHostBitForBit) {
  for (int k = 0; k <= static_cast<int>(FloatPattern::kAscending); ++k)
    for (const std::size_t n : kSizes)
      for (const std::uint64_t seed : kSeeds) {
        const FloatInput in{static_cast<FloatPattern>(k), seed, n};
        const float device = reduce_on_device<FloatMaximum>(in);
        const float host = reference_max(in);
        const bool both_nan = device != device && host != host;
        EXPECT_TRUE(both_nan || float_bits(device) == float_bits(host))
            << where(pattern_name(in.pattern), n, seed) << ": device " << device << ", host "
            << host;
      }
}

TEST(DeviceReference, FixedPointFloatSumMatchesHost) {
  for (int k = 0; k <= static_cast<int>(SumPattern::kCancellation); ++k)
    for (const std::size_t n : kSizes) {
      const auto p = static_cast<SumPattern>(k);
      if (p == SumPattern::kWideShuffled && (n & (n - 1)) != 0) continue;  // powers of two only
      for (const std::uint64_t seed : kSeeds) {
        const SumInput in{p, seed, n};
        const __int128 device = reduce_on_device<Fixed128Sum>(in);
        const __int128 host = exact_sum_fixed(in);
        EXPECT_TRUE(device == host)
            << where(pattern_name(p), n, seed) << ": device " << fixed_to_double(device)
            << ", host " << fixed_to_double(host);
      }
    }
}

}  // namespace
}  // namespace lab::test

int main(int argc, char** argv) {
  return lab::test::run_gpu_tests(argc, argv, "device references");
}
