// Lab 01 (CPU baseline): the three host sums of cpu_sum_contract.hpp on the
// same cases as the GPU labs: edge and seeded random sizes, three input
// patterns, guard bands, a poisoned scratch buffer, repeated calls, and the
// input checked unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bandwidth_report.hpp"
#include "bench.hpp"
#include "cpu_sum_contract.hpp"
#include "failure_report.hpp"
#include "int_inputs.hpp"
#include "not_implemented.hpp"
#include "sum_sizes.hpp"
#include "test_env.hpp"

namespace lab::test {
namespace {

constexpr std::size_t kGuard = 1024;
constexpr int kGuardBefore = 1 << 24;
constexpr int kGuardAfter = 1 << 16;
constexpr int kPoison = static_cast<int>(0xA5A5A5A5u);

struct Variant {
  std::string name;
  std::function<int(const int*, std::size_t, std::vector<int>&)> run;
};

std::vector<Variant> variants() {
  std::vector<Variant> v = {
      {"sum_sequential", [](const int* in, std::size_t n, std::vector<int>&) {
         return sum_sequential(in, n);
       }},
      {"sum_pairwise", [](const int* in, std::size_t n, std::vector<int>& scratch) {
         return sum_pairwise(in, n, n ? scratch.data() : nullptr);
       }},
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  std::vector<unsigned> counts = {1u, 2u, 3u, 8u, hw, 64u};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (const unsigned t : counts)
    v.push_back({"sum_threads(" + std::to_string(t) + ")",
                 [t](const int* in, std::size_t n, std::vector<int>&) {
                   return sum_threads(in, n, t);
                 }});
  return v;
}

// Input in the middle of a vector with guard values on both sides.
std::vector<int> guarded(const IntInput& spec) {
  std::vector<int> buf(spec.n + 2 * kGuard);
  std::fill(buf.begin(), buf.begin() + kGuard, kGuardBefore);
  for (std::size_t i = 0; i < spec.n; ++i) buf[kGuard + i] = spec.at(i);
  std::fill(buf.end() - kGuard, buf.end(), kGuardAfter);
  return buf;
}

void check_cpu_sum(std::size_t n, IntPattern pattern) {
  const std::uint64_t seed = case_seed(n, static_cast<std::uint64_t>(pattern));
  ::testing::Test::RecordProperty("n", std::to_string(n));
  ::testing::Test::RecordProperty("input", pattern_name(pattern));
  const IntInput spec{pattern, seed, n};
  const std::vector<int> pristine = guarded(spec);
  std::vector<int> buf = pristine;
  const int* in = buf.data() + kGuard;
  const int expected = static_cast<int>(reference_sum(spec));
  std::vector<int> scratch(n);
  std::string unimplemented;  // report each missing function once, not once per thread count

  for (const Variant& v : variants()) {
    const std::string function = v.name.substr(0, v.name.find('('));
    if (unimplemented.find(function + ";") != std::string::npos) continue;
    CaseFailure f;
    f.n = n;
    f.input = pattern_name(pattern);
    f.seed = seed;
    f.variant = v.name;
    f.expected = std::to_string(expected);
    try {
      for (int call = 1; call <= 2; ++call) {
        std::fill(scratch.begin(), scratch.end(), kPoison);
        const int got = v.run(in, n, scratch);
        if (got == expected) continue;
        f.got = std::to_string(got);
        f.call = call;
        const std::int64_t diff = std::int64_t{got} - expected;
        if (diff > 0 && diff % kGuardAfter == 0) {
          f.hint = hint::kReadPastEnd;
          f.explain = "too large by a multiple of the guard value after the input: read past in[n-1]";
        } else if (diff % kGuardBefore == 0) {
          f.hint = hint::kReadBeforeStart;
          f.explain = "off by a multiple of the guard value before the input: read before in[0]";
        } else if (call == 2) {
          f.hint = hint::kDiffersBetweenCalls;
          f.explain = "right on the first call, wrong on the second: state kept between calls";
        } else {
          f.hint = hint::kWrongValue;
          f.explain = (n % 2 == 1 && v.name == "sum_pairwise")
                          ? "odd n: halving drops the last element unless it is carried over"
                          : "off by " + std::to_string(diff) + ": check the loop bounds and "
                            "how the slices cover the input";
        }
        report(f);
        break;
      }
    } catch (const NotImplemented& e) {
      f.hint = hint::kNotImplemented;
      f.explain = std::string(e.what()) + ": write that fenced region";
      report(f);
      unimplemented += function + ";";
    }
    if (buf != pristine) {
      f.hint = hint::kInputModified;
      f.explain = "the input (or the memory around it) was changed: work in `scratch` instead";
      report(f);
      buf = pristine;
    }
  }
}

// The int patterns and sizes of the GPU sum labs.
struct CpuSumCases {
  using Pattern = IntPattern;
  static std::vector<Pattern> patterns() { return {std::begin(kIntPatterns), std::end(kIntPatterns)}; }
  static bool allowed(Pattern p, std::size_t n) { return int_pattern_allowed(p, n); }
};

class CpuSumEdgeSizes : public ::testing::TestWithParam<SizeCase<IntPattern>> {};

TEST_P(CpuSumEdgeSizes, MatchesExactSum) { check_cpu_sum(GetParam().n, GetParam().pattern); }

INSTANTIATE_TEST_SUITE_P(CpuSum, CpuSumEdgeSizes, ::testing::ValuesIn(edge_cases<CpuSumCases>()),
                         case_name<IntPattern>);

TEST(CpuSumContract, EmptyInputGivesZero) {
  const int dummy = 7;
  std::string unimplemented;
  for (const Variant& v : variants()) {
    const std::string function = v.name.substr(0, v.name.find('('));
    if (unimplemented.find(function + ";") != std::string::npos) continue;
    std::vector<int> scratch;
    try {
      const int got = v.run(&dummy, 0, scratch);
      if (got != 0)
        report({0, "empty", 0, v.name, "0", std::to_string(got), 1, hint::kWrongValue,
                "the sum of no elements is 0, the identity of +"});
    } catch (const NotImplemented& e) {
      report({0, "empty", 0, v.name, "", "", 0, hint::kNotImplemented, e.what()});
      unimplemented += function + ";";
    }
  }
}

TEST(CpuSumContract, SeededRandomSizes) {
  std::mt19937_64 rng(case_seed(0x5e5e));
  std::uniform_real_distribution<double> log2n(0.0, 22.0);
  for (int k = 0; k < 8 && !HasFailure(); ++k) {
    const auto n = static_cast<std::size_t>(std::exp2(log2n(rng))) + 1;
    SCOPED_TRACE("random size n=" + std::to_string(n));
    check_cpu_sum(n, k % 2 ? IntPattern::kRandom : IntPattern::kAlternating);
  }
}

// Host bandwidth of each variant on 2^26 ints; the threshold applies to the
// threaded sum, as a fraction of a memcpy over all cores in this process.
TEST(CpuSumBandwidth, FractionOfCopyCeiling) {
  if (perf_disabled()) GTEST_SKIP() << "performance checks are off (LAB_SKIP_PERF is set)";
  const std::size_t n = std::size_t{1} << 26;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const IntInput spec{IntPattern::kRandom, case_seed(n, 0xba), n};
  std::vector<int> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = spec.at(i);
  const int expected = static_cast<int>(reference_sum(spec));
  std::vector<int> scratch(n);
  BenchConfig config;
  config.samples = 5;
  const double ceiling = host_copy_ceiling_gbps(n * sizeof(int), hw, config);
  ::testing::Test::RecordProperty("host_threads", static_cast<int>(hw));

  struct Timed {
    const char* name;
    std::function<int()> run;
    bool checked;
  };
  const Timed timed[] = {
      {"sequential", [&] { return sum_sequential(in.data(), n); }, false},
      {"pairwise", [&] { return sum_pairwise(in.data(), n, scratch.data()); }, false},
      {"threads", [&] { return sum_threads(in.data(), n, hw); }, true},
  };
  for (const Timed& t : timed) {
    int got = 0;
    try {
      got = t.run();
    } catch (const NotImplemented& e) {
      ADD_FAILURE() << t.name << ": " << e.what() << "; no bandwidth for a skeleton";
      continue;
    }
    if (got != expected) {
      ADD_FAILURE() << t.name << ": wrong sum at n=" << n << "; no bandwidth for a wrong answer";
      continue;
    }
    BandwidthFigures b;
    b.variant = t.checked ? "" : t.name;
    b.n = n;
    b.ceiling_gbps = ceiling;
    b.result = bench_host([&](long) { got = t.run(); }, n * sizeof(int), config);
    b.device = "host CPU";
    record_bandwidth(b, t.checked);
  }
}

}  // namespace
}  // namespace lab::test
