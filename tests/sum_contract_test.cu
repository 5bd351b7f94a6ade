// Correctness of a GPU int-sum lab (sum_contract.cuh), built once per lab and
// implementation. Every case: a seeded input with guard bands, the output and
// the workspace poisoned, three calls (the second without re-poisoning the
// output, so an output that is not reset inside the call shows), the input
// checked unchanged afterwards, and the exact CPU sum as the reference.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>
#include <string>

#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "device_info.hpp"
#include "failure_report.hpp"
#include "guarded_input.cuh"
#include "int_inputs.hpp"
#include "not_implemented.hpp"
#include "sum_contract.cuh"
#include "sum_sizes.hpp"
#include "test_env.hpp"

namespace lab::test {
namespace {

constexpr unsigned char kPoisonByte = 0xA5;
constexpr int kPoison = static_cast<int>(0xA5A5A5A5u);
constexpr int kGuardBefore = 1 << 24;
constexpr int kGuardAfter = 1 << 16;

// The most specific explanation of one wrong value.
void explain_wrong(int expected, int got, CaseFailure* f) {
  const std::int64_t diff = std::int64_t{got} - expected;
  const std::uint32_t wrapped = static_cast<std::uint32_t>(got) - static_cast<std::uint32_t>(expected);
  if (got == kPoison) {
    f->hint = hint::kNeverWritten;
    f->explain = "the output still holds the poison value 0xA5A5A5A5: nothing wrote *out";
  } else if (wrapped == static_cast<std::uint32_t>(kPoison)) {
    f->hint = hint::kNotReset;
    f->explain = "got = poison + expected: the result was added to *out without resetting it first";
  } else if (diff > 0 && diff % kGuardAfter == 0) {
    f->hint = hint::kReadPastEnd;
    f->explain = "the sum is too large by " + std::to_string(diff / kGuardAfter) +
                 " x the guard value placed after the input: a thread read past in[n-1] "
                 "(missing bounds check)";
  } else if (diff % kGuardBefore == 0) {
    f->hint = hint::kReadBeforeStart;
    f->explain = "the error is a multiple of the guard value placed before the input: a thread "
                 "read before in[0] (a negative or wrapped index)";
  } else {
    f->hint = hint::kWrongValue;
    f->explain = "the sum is off by " + std::to_string(diff) +
                 "; check which elements each thread adds, and the barriers between steps";
  }
}

void check_sum(std::size_t n, IntPattern pattern) {
  const std::uint64_t seed = case_seed(n, static_cast<std::uint64_t>(pattern));
  CaseFailure f;
  f.n = n;
  f.input = pattern_name(pattern);
  f.seed = seed;
  ::testing::Test::RecordProperty("n", std::to_string(n));
  ::testing::Test::RecordProperty("input", f.input);

  CudaStream stream;
  const IntInput spec{pattern, seed, n};
  GuardedInput<int, IntInput> input(spec, n, kGuardBefore, kGuardAfter, stream);
  const std::int64_t exact = reference_sum(spec);
  ASSERT_TRUE(exact >= INT_MIN && exact <= INT_MAX) << "test bug: the input's sum overflows int";
  const int expected = static_cast<int>(exact);
  f.expected = std::to_string(expected);

  DeviceBuffer<int> out(1);
  int got[3] = {0, 0, 0};
  try {
    DeviceBuffer<unsigned char> workspace(sum_workspace_bytes(n));
    workspace.fill_bytes(kPoisonByte, stream);
    for (int call = 0; call < 3; ++call) {
      if (call != 1) out.fill_bytes(kPoisonByte, stream);
      reduce_sum(input.data(), n, out.get(), workspace.get(), stream);
      CUDA_CHECK_LAUNCH();
      stream.synchronize();
      if (lab_todo_reached()) throw NotImplemented("a kernel still runs the skeleton's LAB_TODO()");
      CUDA_CHECK(cudaMemcpy(&got[call], out.get(), sizeof(int), cudaMemcpyDeviceToHost));
    }
  } catch (const NotImplemented& e) {
    f.hint = hint::kNotImplemented;
    f.explain = std::string(e.what()) + ": write the fenced region";
    return report(f);
  } catch (const CudaError& e) {
    f.hint = hint::kCudaError;
    f.explain = e.what();
    return report(f);
  }

  if (got[0] != got[2]) {
    f.got = std::to_string(got[0]) + ", then " + std::to_string(got[2]);
    f.call = got[0] == expected ? 3 : 1;
    f.hint = hint::kDiffersBetweenCalls;
    f.explain = "the same input gave different sums on calls 1 and 3: a race, most often a "
                "missing __syncthreads() between steps of the tree";
    return report(f);
  }
  if (got[0] != expected) {
    f.got = std::to_string(got[0]);
    f.call = 1;
    explain_wrong(expected, got[0], &f);
    return report(f);
  }
  if (got[1] != expected) {
    f.got = std::to_string(got[1]);
    f.call = 2;
    f.hint = hint::kNotReset;
    f.explain = "right on the first call, wrong on the second, which found the first call's "
                "result in *out: reset the output inside the call";
    return report(f);
  }
  if (const std::size_t changed = input.changed(stream); changed != 0) {
    f.hint = hint::kInputModified;
    f.explain = std::to_string(changed) + " input or guard elements were overwritten: the "
                "contract leaves the input unchanged (reduce in shared memory or the workspace)";
    return report(f);
  }
}

class SumEdgeSizes : public ::testing::TestWithParam<SizeCase> {};

TEST_P(SumEdgeSizes, MatchesExactSum) { check_sum(GetParam().n, GetParam().pattern); }

INSTANTIATE_TEST_SUITE_P(Sum, SumEdgeSizes, ::testing::ValuesIn(edge_cases()), case_name);

TEST(SumContract, EmptyInputGivesZero) {
  RecordProperty("n", "0");
  CudaStream stream;
  DeviceBuffer<int> in(1), out(1);
  DeviceBuffer<unsigned char> workspace(sum_workspace_bytes(0));
  out.fill_bytes(kPoisonByte, stream);
  try {
    reduce_sum(in.get(), 0, out.get(), workspace.get(), stream);
    CUDA_CHECK_LAUNCH();
    stream.synchronize();
  } catch (const std::exception& e) {
    FAIL() << "n=0: " << e.what();
  }
  int got = 0;
  CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
  if (got != 0) {
    CaseFailure f{0, "empty", 0, "", "0", std::to_string(got), 1, hint::kWrongValue,
                  "the contract defines the sum of no elements as 0, the identity of +"};
    if (got == kPoison) f.hint = hint::kNeverWritten;
    report(f);
  }
}

// Sizes drawn log-uniformly from [1, 2^24], from the run's seed (printed first).
TEST(SumContract, SeededRandomSizes) {
  std::mt19937_64 rng(case_seed(0x5e5e));
  std::uniform_real_distribution<double> log2n(0.0, 24.0);
  for (int k = 0; k < 12 && !HasFailure(); ++k) {
    const auto n = static_cast<std::size_t>(std::exp2(log2n(rng))) + 1;
    SCOPED_TRACE("random size n=" + std::to_string(n));
    check_sum(n, k % 2 ? IntPattern::kRandom : IntPattern::kAlternating);
  }
}

// Above 2^32 elements, where any 32-bit index overflows. Run last: a wrapped
// index may fault and lose the CUDA context.
TEST(SumZHuge, Above2To32Elements) {
  const DeviceInfo info = query_device();
  const std::size_t need = (kHugeSize + 2 * kGuardElements) * sizeof(int) + (std::size_t{1} << 30);
  if (info.free_mem_bytes < need)
    GTEST_SKIP() << "needs " << need / (1u << 30) << " GiB of free GPU memory, this GPU has "
                 << info.free_mem_bytes / (1u << 30) << " GiB free";
  check_sum(kHugeSize, IntPattern::kRandom);
}

}  // namespace
}  // namespace lab::test
