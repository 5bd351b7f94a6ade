#include "bandwidth_report.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace lab::test {
namespace {
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
}  // namespace

void record_bandwidth(const BandwidthFigures& b) {
  const std::string p = b.variant.empty() ? "" : b.variant + "_";
  const double gbps = b.result.gbps();
  const double fraction = b.ceiling_gbps > 0 ? gbps / b.ceiling_gbps : 0.0;
  const bool implausible = fraction > b.implausible_above ||
                           (b.theoretical_gbps > 0 && gbps > 1.02 * b.theoretical_gbps);
  ::testing::Test::RecordProperty(p + "n", std::to_string(b.n));
  ::testing::Test::RecordProperty(p + "gbps", num(gbps));
  ::testing::Test::RecordProperty(p + "median_ms", num(b.result.median_ms));
  ::testing::Test::RecordProperty(p + "min_ms", num(b.result.min_ms));
  ::testing::Test::RecordProperty(p + "max_ms", num(b.result.max_ms));
  ::testing::Test::RecordProperty(p + "calls_per_batch", std::to_string(b.result.calls_per_batch));
  ::testing::Test::RecordProperty(p + "fraction", num(fraction));
  ::testing::Test::RecordProperty(p + "graded", b.graded ? "1" : "0");
  if (implausible) ::testing::Test::RecordProperty(p + "implausible", "1");
  ::testing::Test::RecordProperty("ceiling_gbps", num(b.ceiling_gbps));
  if (b.theoretical_gbps > 0)
    ::testing::Test::RecordProperty("theoretical_gbps", num(b.theoretical_gbps));
  if (!b.device.empty()) ::testing::Test::RecordProperty("device", b.device);
  std::printf("%s%.1f GB/s at n=%zu: %.3f of the %.1f GB/s copy ceiling%s\n",
              b.variant.empty() ? "" : (b.variant + ": ").c_str(), gbps, b.n, fraction,
              b.ceiling_gbps,
              implausible ? " (faster than this machine can read its input: not scored)" : "");
}

}  // namespace lab::test
