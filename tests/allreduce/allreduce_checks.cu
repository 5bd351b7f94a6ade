// Lab 12's correctness tests, run by the trusted checker (checker-gpu_allreduce):
// the lab's code runs in the runner; every buffer, the expected sums and the
// verdict are the checker's (allreduce_rig.cuh). The solution, the skeleton and
// the mutants (tests/mutants/12_multi_gpu_allreduce.toml) are all judged here.
//
// Every check is exact: the contract fixes the order of the additions (rank
// order), so every GPU must hold the checker's rank-order sum bit for bit. One
// GPU: the contract's copy is tested and every multi-GPU test skips with the
// reason (the grader does not grade lab 12 there). A call that does not end
// within the checker's call timeout is a hang: the runner is killed and the
// case reported (hint timed_out).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "allreduce_rig.cuh"

namespace {

using namespace lab::test::allreduce;  // NOLINT: the suite's own vocabulary
using lab::test::case_seed;
using lab::test::CaseFailure;
using lab::test::RunnerError;

// ---- one GPU: the contract is a copy ----

TEST(AllreduceOneGpu, OutOfPlaceIsACopy) {
  NEED_GPUS(1);
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{3}, std::size_t{1000}, (std::size_t{1} << 20) + 1}) {
    Case c(1, n, false);
    run_and_check(c, A::kAuto, case_seed(n, 1), "random");
    if (HasFailure()) return;
  }
}

TEST(AllreduceOneGpu, InPlaceLeavesTheInput) {
  NEED_GPUS(1);
  Case c(1, 4097, true);
  run_and_check(c, A::kAuto, case_seed(4097, 2), "random");
}

TEST(AllreduceOneGpu, ZeroElementsWritesNothing) {
  NEED_GPUS(1);
  Case c(1, 0, false);
  run_and_check(c, A::kAuto, case_seed(0, 3), "empty", {}, 1);
}

// allreduce_sum with 0 GPUs or more than kAllreduceMaxGpus throws std::invalid_argument.
TEST(AllreduceOneGpu, RejectsBadGpuCounts) {
  NEED_GPUS(1);
  Case c(1, 8, false);
  CaseFailure f;
  f.n = 8;
  f.input = "random";
  f.variant = "a bad GPU count";
  if (!guarded(f, [&] {
        c.make_workspaces();
        c.fill(case_seed(8, 4));
      }))
    return;
  for (const int told : {0, kAllreduceMaxGpus + 1}) {
    f.variant = "gpus = " + std::to_string(told);
    f.call = 1;
    try {
      run_remote(c.call(A::kAuto, 0, told), 1);
      f.hint = lab::test::hint::kWrongValue;
      f.explain = "allreduce_sum(ranks, " + std::to_string(told) +
                  ", n) returned; the contract says it throws std::invalid_argument for a GPU "
                  "count outside 1 to " +
                  std::to_string(kAllreduceMaxGpus);
      return report(f);
    } catch (const RunnerError& e) {
      const std::string what = e.what();
      if (e.hint() == "exception" && what.find("invalid_argument") != std::string::npos) continue;
      f.hint = e.hint();
      f.explain = what + " (the contract says: throw std::invalid_argument)";
      return report(f);
    } catch (const lab::NotImplemented& e) {
      f.hint = lab::test::hint::kNotImplemented;
      f.explain = std::string(e.what()) + ": write the fenced code";
      return report(f);
    }
  }
}

// ---- two GPUs and more ----

struct Variant {
  A algorithm;
  bool in_place;
};

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return std::string(algorithm_name(info.param.algorithm)) +
         (info.param.in_place ? "_in_place" : "_out_of_place");
}

class AllreduceVariants : public ::testing::TestWithParam<Variant> {};

// Sizes that are multiples of nothing, next to ones that are: a float4 body
// with 1, 2 or 3 floats left, shares of two-shot that are not whole vectors.
TEST_P(AllreduceVariants, EdgeSizes) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{5},
        std::size_t{7}, std::size_t{31}, std::size_t{33}, std::size_t{255}, std::size_t{257},
        std::size_t{1000}, std::size_t{4097}, std::size_t{65537}, (std::size_t{1} << 20) + 3,
        std::size_t{10000001}, std::size_t{16777213}}) {
    Case c(machine().gpus, n, v.in_place);
    run_and_check(c, v.algorithm, case_seed(n, 5), "random");
    if (HasFailure()) return;
  }
}

// Sizes drawn from [1, 2^22] with the run's seed (printed first: --seed=N repeats them).
TEST_P(AllreduceVariants, RandomSizes) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  std::mt19937_64 pick(case_seed(0x5e5e));
  for (int k = 0; k < 4; ++k) {
    const std::size_t n = 1 + pick() % (std::size_t{1} << 22);
    SCOPED_TRACE("random size n=" + std::to_string(n));
    Case c(machine().gpus, n, v.in_place);
    run_and_check(c, v.algorithm, case_seed(n, 6), "random");
    if (HasFailure()) return;
  }
}

// NaN from any GPU makes NaN; inf + -inf makes NaN; inf plus finite stays inf.
// Planted in the body and in the tail, on every GPU the machine has.
TEST_P(AllreduceVariants, NanAndInfinities) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  const int g = machine().gpus;
  const float inf = INFINITY, nan = NAN;
  const std::size_t n = 4099;  // 1024 vectors and 3 floats
  const std::vector<Plant> plants = {{0, 5, nan},      {g - 1, 6, nan},    {0, 7, inf},
                                     {g - 1, 7, -inf}, {1, 8, inf},        {0, 9, -inf},
                                     {1, 9, -inf},     {g - 1, 4098, inf}, {0, 4097, nan}};
  Case c(g, n, v.in_place);
  run_and_check(c, v.algorithm, case_seed(n, 7), "random with NaN and infinities", plants);
}

// Buffers one float past a 16-byte boundary: no float4 may be used on them.
TEST_P(AllreduceVariants, UnalignedBuffers) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  for (const std::size_t n : {std::size_t{1}, std::size_t{1001}, (std::size_t{1} << 18) + 1}) {
    Case c(machine().gpus, n, v.in_place, 1);
    run_and_check(c, v.algorithm, case_seed(n, 8), "random", {}, 2, 1);
    if (HasFailure()) return;
  }
}

// Many calls on one workspace: the flags count on from where the last call
// left them, and the answer never changes.
TEST_P(AllreduceVariants, RepeatedCalls) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  const std::size_t n = (std::size_t{1} << 16) + 1;
  Case c(machine().gpus, n, v.in_place);
  run_and_check(c, v.algorithm, case_seed(n, 9), "random", {}, 20);
}

INSTANTIATE_TEST_SUITE_P(Lab12, AllreduceVariants,
                         ::testing::Values(Variant{A::kAuto, false}, Variant{A::kAuto, true},
                                           Variant{A::kOneShot, false}, Variant{A::kOneShot, true},
                                           Variant{A::kTwoShot, false}, Variant{A::kTwoShot, true}),
                         variant_name);

// Two all-reduces in flight at once, each on its own streams (the runner's
// stream 0 and stream 1 of every GPU) and workspaces, queued alternately in
// one request: neither may wait for or write into the other.
TEST(AllreduceTwoStreams, IndependentCallsInFlight) {
  NEED_GPUS(2);
  const int g = machine().gpus;
  for (const A algorithm : {A::kOneShot, A::kTwoShot}) {
    Case a(g, (std::size_t{1} << 20) + 1, false), b(g, 300001, true);
    CaseFailure f;
    f.n = a.n();
    f.input = "random";
    f.variant = std::string(algorithm_name(algorithm)) + ", two calls in flight on two streams";
    for (int k = 0; k < 3; ++k) {
      const std::uint64_t seeds[2] = {case_seed(k, 10), case_seed(k, 11)};
      f.seed = seeds[0];
      f.call = k + 1;
      const bool ran = guarded(f, [&] {
        if (k == 0) {
          a.make_workspaces();
          b.make_workspaces();
        }
        a.fill(seeds[0]);
        b.fill(seeds[1]);
        std::vector<lab::test::Invocation> calls = a.call(algorithm, 0);
        for (const auto& c : b.call(algorithm, 1)) calls.push_back(c);
        for (const auto& c : a.call(algorithm, 0)) calls.push_back(c);  // again, while b may run
        run_remote(calls, g);
      });
      if (!ran) return;
      for (const Case* c : {&a, &b}) {
        const std::vector<Mismatch> bad = c->verify();
        if (bad.empty()) continue;
        CaseFailure h = f;
        h.n = c->n();
        h.seed = c == &a ? seeds[0] : seeds[1];
        h.variant += c == &a ? " (the out-of-place call)" : " (the in-place call)";
        h.expected = bad[0].expected;
        h.got = bad[0].got;
        h.hint = bad[0].hint == lab::test::hint::kWrongValue ? lab::test::hint::kSharedState
                                                             : bad[0].hint;
        h.explain = bad[0].explain +
                    "; two calls in flight interfered: keep every call's state in its own "
                    "workspace, and queue every operation on the caller's streams";
        return report(h);
      }
    }
  }
}

// Every GPU count from 2 to what the machine has: the kernels are built for
// each G, and a machine of 2 runs only G = 2.
TEST(AllreduceGpuCounts, EveryCount) {
  NEED_GPUS(2);
  for (int g = 2; g <= machine().gpus; ++g)
    for (const A algorithm : {A::kOneShot, A::kTwoShot})
      for (const bool in_place : {false, true}) {
        Case c(g, 100003, in_place);
        run_and_check(c, algorithm, case_seed(100003, 12 + g), "random");
        if (HasFailure()) return;
      }
}

}  // namespace
