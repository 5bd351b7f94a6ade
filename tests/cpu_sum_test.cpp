// Lab 01 (CPU baseline): the three host sums of cpu_sum_contract.hpp on the
// same cases as the GPU labs: edge and seeded random sizes, three input
// patterns, guard bands, a poisoned scratch buffer, repeated calls, and the
// input checked unchanged. The functions run in the runner; the input,
// scratch and result live in shared memory this checker owns and checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bandwidth_report.hpp"
#include "bench.hpp"
#include "failure_report.hpp"
#include "int_inputs.hpp"
#include "not_implemented.hpp"
#include "planted_copies.hpp"
#include "runner_link.hpp"
#include "shared_buffer.hpp"
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
  Fn fn;
  unsigned threads = 0;
};

std::vector<Variant> variants() {
  std::vector<Variant> v = {{"sum_sequential", Fn::kCpuSequential},
                            {"sum_pairwise", Fn::kCpuPairwise}};
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  std::vector<unsigned> counts = {1u, 2u, 3u, 8u, hw, 64u};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (const unsigned t : counts)
    v.push_back({"sum_threads(" + std::to_string(t) + ")", Fn::kCpuThreads, t});
  return v;
}

// One call in the runner; the result comes back through shared memory.
int call(const Variant& v, const int* in, std::size_t n, int* scratch, int* out) {
  *out = kPoison;
  Invocation c;
  c.fn = v.fn;
  c.arg = v.threads;
  c.n = n;
  c.in = in;
  c.out = out;
  c.scratch = v.fn == Fn::kCpuPairwise && n ? scratch : nullptr;
  RunnerLink::get().run({c});
  return *out;
}

void fill_guarded(int* buf, const IntInput& spec) {
  std::fill(buf, buf + kGuard, kGuardBefore);
  for (std::size_t i = 0; i < spec.n; ++i) buf[kGuard + i] = spec.at(i);
  std::fill(buf + kGuard + spec.n, buf + spec.n + 2 * kGuard, kGuardAfter);
}

// How an input's element is changed between calls and batches (planted_copies.hpp).
struct CpuSumPlanting {
  using T = int;
  using Input = IntInput;
  using Exact = std::int64_t;
  static Exact exact(const Input& in) { return reference_sum(in); }
  static T expected_of(Exact e) { return static_cast<T>(e); }
  static T plant(std::mt19937_64& rng, const Input& in, T) {
    return int_value_in_bounds(in.n, rng());
  }
  static Exact replaced(Exact base, T original, T planted) { return base - original + planted; }
  static bool same(T a, T b) { return a == b; }
};

void check_cpu_sum(std::size_t n, IntPattern pattern) {
  const std::uint64_t seed = case_seed(n, static_cast<std::uint64_t>(pattern));
  ::testing::Test::RecordProperty("n", std::to_string(n));
  ::testing::Test::RecordProperty("input", pattern_name(pattern));
  const IntInput spec{pattern, seed, n};
  HostShared<int> buf(spec.n + 2 * kGuard), scratch(std::max<std::size_t>(n, 1)), out(1);
  fill_guarded(buf.get(), spec);
  const std::vector<int> pristine(buf.get(), buf.get() + buf.size());
  int* in = buf.get() + kGuard;
  const std::int64_t exact = reference_sum(spec);
  const int expected = static_cast<int>(exact);
  PlantedCopies<CpuSumPlanting> changed(spec, exact, 1, case_seed(n, 0xc4a9));
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
      for (int round = 1; round <= 2; ++round) {
        std::fill(scratch.get(), scratch.get() + scratch.size(), kPoison);
        const int got = call(v, in, n, scratch.get(), out.get());
        if (got == expected) continue;
        f.got = std::to_string(got);
        f.call = round;
        const std::int64_t diff = std::int64_t{got} - expected;
        if (diff > 0 && diff % kGuardAfter == 0) {
          f.hint = hint::kReadPastEnd;
          f.explain =
              "too large by a multiple of the guard value after the input: read past in[n-1]";
        } else if (diff % kGuardBefore == 0) {
          f.hint = hint::kReadBeforeStart;
          f.explain = "off by a multiple of the guard value before the input: read before in[0]";
        } else if (round == 2) {
          f.hint = hint::kDiffersBetweenCalls;
          f.explain = "right on the first call, wrong on the second: state kept between calls";
        } else {
          f.hint = hint::kWrongValue;
          if (n % 2 == 1 && v.fn == Fn::kCpuPairwise) {
            f.explain = "odd n: halving drops the last element unless it is carried over";
          } else if (v.fn == Fn::kCpuThreads) {
            f.explain = "off by " + std::to_string(diff) + " with " + std::to_string(v.threads) +
                        " threads and n = " + std::to_string(n) +
                        ": the slices do not cover the input exactly (a slice size that "
                        "rounds down loses the remainder; one that overlaps counts twice)";
          } else {
            f.explain = "off by " + std::to_string(diff) + ": check the loop bounds";
          }
        }
        report(f);
        break;
      }
      // One element changed, same pointer and size: a remembered answer is wrong now.
      if (!::testing::Test::HasFailure()) {
        const auto w = changed.replant(0);
        const int original = in[w.at];
        in[w.at] = w.value;
        const int got = call(v, in, n, scratch.get(), out.get());
        in[w.at] = original;
        if (got != changed.expected(0)) {
          f.expected = std::to_string(changed.expected(0));
          f.got = std::to_string(got);
          f.call = 3;
          f.hint = got == expected ? hint::kStaleResult : hint::kWrongValue;
          f.explain = got == expected
                          ? "after one element of the input changed (same pointer, same size), "
                            "the call returned the old answer: compute the sum on every call"
                          : "wrong after one element of the input changed between calls";
          report(f);
        }
      }
    } catch (const NotImplemented& e) {
      f.hint = hint::kNotImplemented;
      f.explain = std::string(e.what()) + ": write that fenced region";
      report(f);
      unimplemented += function + ";";
    } catch (const RunnerError& e) {
      f.hint = e.hint();
      f.explain = e.what();
      report(f);
      return;  // the runner is gone: the next case starts a new one
    }
    if (!std::equal(pristine.begin(), pristine.end(), buf.get())) {
      f.hint = hint::kInputModified;
      f.explain = "the input (or the memory around it) was changed: work in `scratch` instead";
      report(f);
      std::copy(pristine.begin(), pristine.end(), buf.get());
    }
  }
}

// The int patterns and sizes of the GPU sum labs.
struct CpuSumCases {
  using Pattern = IntPattern;
  static std::vector<Pattern> patterns() {
    return {std::begin(kIntPatterns), std::end(kIntPatterns)};
  }
  static bool allowed(Pattern p, std::size_t n) { return int_pattern_allowed(p, n); }
};

class CpuSumEdgeSizes : public ::testing::TestWithParam<SizeCase<IntPattern>> {};

TEST_P(CpuSumEdgeSizes, MatchesExactSum) { check_cpu_sum(GetParam().n, GetParam().pattern); }

INSTANTIATE_TEST_SUITE_P(CpuSum, CpuSumEdgeSizes, ::testing::ValuesIn(edge_cases<CpuSumCases>()),
                         case_name<IntPattern>);

TEST(CpuSumContract, EmptyInputGivesZero) {
  HostShared<int> dummy(1), out(1);
  dummy.get()[0] = 7;
  std::string unimplemented;
  for (const Variant& v : variants()) {
    const std::string function = v.name.substr(0, v.name.find('('));
    if (unimplemented.find(function + ";") != std::string::npos) continue;
    try {
      const int got = call(v, dummy.get(), 0, nullptr, out.get());
      if (got != 0)
        report({0, "empty", 0, v.name, "0", std::to_string(got), 1, hint::kWrongValue,
                "the sum of no elements is 0, the identity of +"});
    } catch (const NotImplemented& e) {
      report({0, "empty", 0, v.name, "", "", 0, hint::kNotImplemented, e.what()});
      unimplemented += function + ";";
    } catch (const RunnerError& e) {
      report({0, "empty", 0, v.name, "", "", 0, e.hint(), e.what()});
      return;
    }
  }
}

// The smallest sizes in order, stopping at the first failure: a bug that shows only
// at some sizes is reported at the smallest one (an odd size's lost element at n = 3,
// slices that miss elements when n is below the thread count), which the grader puts
// first among the failures.
TEST(CpuSumContract, SmallSizesInOrder) {
  for (std::size_t n = 1; n <= 17 && !HasFailure(); ++n) check_cpu_sum(n, IntPattern::kRandom);
}

TEST(CpuSumContract, SeededRandomSizes) {
  std::mt19937_64 rng(case_seed(0x5e5e));
  const std::vector<std::size_t> sizes = seeded_sizes(rng, 8, 22.0);
  for (std::size_t k = 0; k < sizes.size() && !HasFailure(); ++k) {
    SCOPED_TRACE("random size n=" + std::to_string(sizes[k]));
    check_cpu_sum(sizes[k], k % 2 ? IntPattern::kRandom : IntPattern::kAlternating);
  }
}

// Host bandwidth of each function on 2^26 ints, timed by this process from
// outside the runner, every result checked; the threaded sum is scored, as a
// fraction of a memcpy over all cores measured with no runner alive.
TEST(CpuSumBandwidth, FractionOfCopyCeiling) {
  if (perf_disabled()) GTEST_SKIP() << "performance checks are off (LAB_SKIP_PERF is set)";
  const std::size_t n = std::size_t{1} << 26;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  BenchConfig config;
  config.samples = 5;
  const double ceiling =
      ceiling_gbps([&] { return host_copy_ceiling_gbps(n * sizeof(int), hw, config); });
  ::testing::Test::RecordProperty("host_threads", static_cast<int>(hw));

  constexpr std::size_t kCopies = 3;  // 768 MiB: larger than any CPU cache, and no repeats
  const IntInput spec{IntPattern::kRandom, case_seed(n, 0xba), n};
  HostShared<int> inputs(kCopies * n), scratch(n), outs(kCopies);
  for (std::size_t i = 0; i < n; ++i) inputs.get()[i] = spec.at(i);
  for (std::size_t c = 1; c < kCopies; ++c)
    std::copy(inputs.get(), inputs.get() + n, inputs.get() + c * n);

  const Variant timed[] = {{"sequential", Fn::kCpuSequential},
                           {"pairwise", Fn::kCpuPairwise},
                           {"threads", Fn::kCpuThreads, hw}};
  // One set of plants for all three: each batch restores the last one.
  PlantedCopies<CpuSumPlanting> planted(spec, kCopies, case_seed(n, 0x91a7));
  for (const Variant& v : timed) {
    CaseFailure f;
    f.n = n;
    f.input = "random, timed";
    f.seed = spec.seed;
    f.variant = v.name;
    auto time_calls = [&](long, int count) -> double {
      std::vector<Invocation> calls;
      for (int c = 0; c < count; ++c) {
        const auto w = planted.replant(c);
        int* copy = inputs.get() + c * n;
        if (w.restore) copy[w.restore_at] = w.restore_value;
        copy[w.at] = w.value;
        outs.get()[c] = kPoison;
        Invocation call;
        call.fn = v.fn;
        call.arg = v.threads;
        call.n = n;
        call.in = copy;
        call.out = outs.get() + c;
        call.scratch = v.fn == Fn::kCpuPairwise ? scratch.get() : nullptr;
        calls.push_back(call);
      }
      const WallTimer timer;
      RunnerLink::get().run(calls);
      const double ms = timer.ms();
      for (int c = 0; c < count; ++c) {
        const int got = outs.get()[c];
        if (got == planted.expected(c)) continue;
        f.expected = std::to_string(planted.expected(c));
        f.got = std::to_string(got);
        f.call = c + 1;
        const bool stale = got == planted.previous(c);
        f.hint = stale ? hint::kStaleResult : hint::kWrongValue;
        f.explain = stale ? "a timed call returned the answer its input had before one element "
                            "changed: results must be computed on every call, not remembered"
                          : "a timed call gave a wrong sum; no bandwidth for a wrong answer";
        throw f;
      }
      return ms;
    };
    config.max_calls_per_batch = static_cast<int>(kCopies);
    config.min_batch_ms = 4.0;
    BenchResult result;
    try {
      result = bench_calls(time_calls, n * sizeof(int), config);
    } catch (const CaseFailure& failure) {
      report(failure);
      continue;
    } catch (const NotImplemented& e) {
      report({n, "random, timed", 0, v.name, "", "", 0, hint::kNotImplemented, e.what()});
      continue;
    } catch (const RunnerError& e) {
      report({n, "random, timed", 0, v.name, "", "", 0, e.hint(), e.what()});
      continue;
    }
    BandwidthFigures b;
    b.variant = v.fn == Fn::kCpuThreads ? "" : v.name;
    b.n = n;
    b.ceiling_gbps = ceiling;
    b.result = result;
    b.device = "host CPU";
    b.graded = v.fn == Fn::kCpuThreads;
    b.implausible_above = 2.0;
    record_bandwidth(b);
  }
}

}  // namespace
}  // namespace lab::test
