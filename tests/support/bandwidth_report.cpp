#include "bandwidth_report.hpp"

#include <gtest/gtest.h>

#include <cstdio>

#include "test_env.hpp"

namespace lab::test {
namespace {
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
}  // namespace

void record_bandwidth(const BandwidthFigures& b, bool check) {
  const std::string p = b.variant.empty() ? "" : b.variant + "_";
  const double fraction = b.ceiling_gbps > 0 ? b.result.gbps() / b.ceiling_gbps : 0.0;
  ::testing::Test::RecordProperty(p + "n", std::to_string(b.n));
  ::testing::Test::RecordProperty(p + "gbps", num(b.result.gbps()));
  ::testing::Test::RecordProperty(p + "median_ms", num(b.result.median_ms));
  ::testing::Test::RecordProperty(p + "min_ms", num(b.result.min_ms));
  ::testing::Test::RecordProperty(p + "max_ms", num(b.result.max_ms));
  ::testing::Test::RecordProperty(p + "fraction", num(fraction));
  if (!check) return;
  ::testing::Test::RecordProperty("ceiling_gbps", num(b.ceiling_gbps));
  if (b.theoretical_gbps > 0)
    ::testing::Test::RecordProperty("theoretical_gbps", num(b.theoretical_gbps));
  if (!b.device.empty()) ::testing::Test::RecordProperty("device", b.device);
  ::testing::Test::RecordProperty("threshold", num(meta().threshold));
  ::testing::Test::RecordProperty("floor", num(meta().floor));
  std::printf("%s%s: %.1f GB/s at n=%zu, %.3f of the %.1f GB/s ceiling (threshold %.3f)\n",
              p.c_str(), meta().id, b.result.gbps(), b.n, fraction, b.ceiling_gbps,
              meta().threshold);
  EXPECT_GE(fraction, meta().threshold)
      << p << "bandwidth " << num(b.result.gbps()) << " GB/s is " << num(fraction)
      << " of the " << num(b.ceiling_gbps) << " GB/s ceiling measured in this process; "
      << "the lab's threshold is " << meta().threshold;
}

}  // namespace lab::test
