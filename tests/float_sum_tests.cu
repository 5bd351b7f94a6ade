// Tests of lab 11 (float_sum_contract.cuh). Each method gets the whole
// contract suite on small integers, which every method sums exactly (sizes,
// guards, poisoning, streams, alignment, 2^32+ elements, bandwidth); then the
// accuracy tests: hard inputs of 2^24 elements against the exact sum, where
// the compensated and double methods must be within 4 ulps of it and the
// plain float methods have their error recorded.
#include <cmath>

#include "accuracy_draw.hpp"
#include "contract_suite.cuh"

namespace lab::test {
namespace {

LAB_CONTRACT_TESTS(NaiveSum, NaiveFloatSumTraits)
LAB_CONTRACT_TESTS(PairwiseSum, PairwiseFloatSumTraits)
LAB_CONTRACT_TESTS(KahanSum, KahanFloatSumTraits)
LAB_CONTRACT_TESTS(DoubleSum, DoubleFloatSumTraits)

struct AccuracyCase {
  FloatSumMethod method;
  SumPattern pattern;
};

void PrintTo(const AccuracyCase& c, std::ostream* os) {
  *os << method_name(c.method) << ", " << pattern_name(c.pattern);
}

class FloatSumAccuracy : public ::testing::TestWithParam<AccuracyCase> {};

// Relative error against the exact sum; the accurate methods must stay within
// 4 ulps (2^-22 relative), the others are measured, not judged.
TEST_P(FloatSumAccuracy, AgainstExactSum) {
  const AccuracyCase c = GetParam();
  const std::size_t n = std::size_t{1} << 24;
  // wide_sorted and wide_shuffled share a seed: the same values in two orders,
  // with one exact sum, so their errors differ by the order alone. A total near
  // 0 is drawn again (accuracy_draw.hpp).
  const SumPattern draw =
      c.pattern == SumPattern::kWideShuffled ? SumPattern::kWideSorted : c.pattern;
  const AccuracyDraw drawn = accuracy_draw(draw, n, [&](std::uint64_t k) {
    return case_seed(n, static_cast<std::uint64_t>(draw) + 16 * k);
  });
  const std::uint64_t seed = drawn.seed;
  const SumInput spec{c.pattern, seed, n};
  const __int128 exact = drawn.exact;
  RecordProperty("redraws", drawn.redraws);
  CudaStream stream;
  DeviceShared<float> in(n), out(1);
  DeviceShared<unsigned char> workspace;
  generate(in.get(), n, spec, stream);
  float got = 0;
  CaseFailure f;
  f.n = n;
  f.input = pattern_name(c.pattern);
  f.seed = seed;
  f.variant = method_name(c.method);
  const bool ran = guarded_calls(f, [&] {
    workspace = zeroed_workspace(
        RunnerLink::get().workspace_bytes(Fn::kFloatSum, static_cast<std::uint32_t>(c.method), n,
                                          (std::size_t{1} << 30) + 8 * n),
        stream);
    out.fill_bytes(kPoisonBits & 0xff, stream);
    Invocation call;
    call.fn = Fn::kFloatSum;
    call.arg = static_cast<std::uint32_t>(c.method);
    call.n = n;
    call.in = in.get();
    call.out = out.get();
    call.scratch = workspace.get();
    run_remote({call});
    got = read_back(out.get());
  });
  if (!ran) return;
  const double exact_d = fixed_to_double(exact);
  const double relative = error_of(got, exact) / std::fabs(exact_d);
  const double ulps = ulps_of(got, exact);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", relative);
  RecordProperty("relative_error", buf);
  std::snprintf(buf, sizeof buf, "%.3g", ulps);
  RecordProperty("ulps", buf);
  RecordProperty("method", method_name(c.method));
  RecordProperty("input", pattern_name(c.pattern));
  std::printf("%-9s %-14s exact %.9g got %.9g: relative error %.3g (%.3g ulps)\n",
              method_name(c.method), pattern_name(c.pattern), exact_d, got, relative, ulps);
  const bool judged = c.method == FloatSumMethod::kKahan || c.method == FloatSumMethod::kDouble;
  if (judged && !(relative <= 0x1p-22)) {
    char e[32], g[32];
    std::snprintf(e, sizeof e, "%.9g", exact_d);
    std::snprintf(g, sizeof g, "%.9g", got);
    report({n, pattern_name(c.pattern), seed, method_name(c.method), e, g, 1, hint::kInaccurate,
            std::string(buf) +
                " ulps from the exact sum, over the limit (a relative error of 2^-22, "
                "2 to 4 ulps): " +
                (c.method == FloatSumMethod::kKahan
                     ? "check the compensation in add and the TwoSum in combine"
                     : "accumulate in double all the way, and round to float once")});
  }
}

std::vector<AccuracyCase> accuracy_cases() {
  std::vector<AccuracyCase> cases;
  for (const SumPattern p :
       {SumPattern::kWideSorted, SumPattern::kWideShuffled, SumPattern::kCancellation})
    for (const FloatSumMethod m : {FloatSumMethod::kNaive, FloatSumMethod::kPairwise,
                                   FloatSumMethod::kKahan, FloatSumMethod::kDouble})
      cases.push_back({m, p});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Hard, FloatSumAccuracy, ::testing::ValuesIn(accuracy_cases()),
                         [](const ::testing::TestParamInfo<AccuracyCase>& info) {
                           return std::string(method_name(info.param.method)) + "_" +
                                  pattern_name(info.param.pattern);
                         });

}  // namespace
}  // namespace lab::test
