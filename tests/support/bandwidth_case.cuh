// The bandwidth test of every GPU contract, as a fraction of a device-to-device
// copy measured with no student process alive (test_env.hpp). Input: at least
// 2^26 elements and 8x the L2. Bytes counted: the input, read once.
//
// The checker times the runner from outside, with its own clock: a batch of
// calls, each on a copy of its own (no call reads from L2, or the same input
// twice), one element of every copy changed before the batch (no answer can
// be remembered), the outputs poisoned; the clock stops once the checker has
// read every output back itself, and every one is checked before the time
// counts. The round trip, the switch between the two processes' CUDA contexts
// and the read-back cost about 240 us per batch on an H200 (lab 07: 149 us per
// call in batches of 11 against 127 us in-process), so batches last about
// 10 ms, up to 64 copies: a few percent (thresholds are calibrated through
// the same path).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "bandwidth_report.hpp"
#include "bench_device.hpp"
#include "contract_check.cuh"
#include "planted_copies.hpp"

namespace lab::test {

inline constexpr std::size_t kMaxTimedCopies = 64;

// A wrong answer inside a timed batch: no figure, and the case is reported.
struct WrongTimedCall {
  std::size_t call = 0;
  std::string expected, got;
  bool stale = false;  // the copy's answer before its last change
};

template <class C, class T>
void apply(const typename PlantedCopies<C>::Write& w, T* copy) {
  if (w.restore)
    CUDA_CHECK(
        cudaMemcpy(copy + w.restore_at, &w.restore_value, sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(copy + w.at, &w.value, sizeof(T), cudaMemcpyHostToDevice));
}

template <class C>
void check_bandwidth() {
  using T = typename C::T;
  if (perf_disabled()) GTEST_SKIP() << "performance checks are off (LAB_SKIP_PERF is set)";
  const DeviceInfo info = query_device();
  const std::size_t n = bandwidth_test_elements(info, sizeof(T));
  CudaStream stream;
  const double ceiling =
      ceiling_gbps([&] { return copy_ceiling_gbps(copy_ceiling_bytes(info), stream); });
  const std::size_t free_bytes = query_device().free_mem_bytes;
  const std::size_t copies = std::min(kMaxTimedCopies, free_bytes * 2 / 5 / (n * sizeof(T)));
  if (copies < 2) GTEST_SKIP() << "needs two copies of " << n * sizeof(T) << " bytes of GPU memory";

  const typename C::Input spec = C::bandwidth_input(case_seed(n, 0xba), n);
  DeviceShared<T> inputs(copies * n);
  for (std::size_t c = 0; c < copies; ++c) generate(inputs.get() + c * n, n, spec, stream);
  DeviceShared<T> outs(copies);
  DeviceShared<unsigned char> workspace;
  PlantedCopies<C> planted(spec, copies, case_seed(n, 0x91a7));

  CaseFailure f;
  f.n = n;
  f.input = std::string(pattern_name(spec.pattern)) + ", timed";
  f.seed = spec.seed;
  f.variant = C::variant();
  BenchResult result;
  const bool ran = guarded_calls(f, [&] {
    workspace = new_workspace<C>(n, stream);
    auto time_calls = [&](long, int count) -> double {
      for (int c = 0; c < count; ++c) apply<C>(planted.replant(c), inputs.get() + c * n);
      outs.fill_bytes(kPoisonBits & 0xff, stream);
      std::vector<Invocation> calls;
      for (int c = 0; c < count; ++c)
        calls.push_back(call_of<C>(inputs.get() + c * n, n, outs.get() + c, workspace.get()));
      CUDA_CHECK(cudaDeviceSynchronize());
      const WallTimer timer;
      RunnerLink::get().run(calls);
      std::vector<T> got(static_cast<std::size_t>(count));
      CUDA_CHECK(
          cudaMemcpy(got.data(), outs.get(), got.size() * sizeof(T), cudaMemcpyDeviceToHost));
      const double ms = timer.ms();
      for (std::size_t c = 0; c < got.size(); ++c)
        if (!C::same_timed(got[c], planted.expected(c)))
          throw WrongTimedCall{c + 1, C::show(planted.expected(c)), C::show(got[c]),
                               C::same_timed(got[c], planted.previous(c))};
      return ms;
    };
    BenchConfig config;
    config.min_batch_ms = 10.0;
    config.max_calls_per_batch = static_cast<int>(copies);
    try {
      result = bench_calls(time_calls, n * sizeof(T), config);
    } catch (const WrongTimedCall& w) {
      CaseFailure g = f;
      g.expected = w.expected;
      g.got = w.got;
      g.call = static_cast<int>(w.call);
      g.hint = w.stale ? hint::kStaleResult : hint::kWrongValue;
      g.explain = w.stale ? "a timed call returned the answer its input had before one element "
                            "changed: results must be computed on every call, not remembered"
                          : "a timed call on a large input gave a wrong answer; no bandwidth is "
                            "reported for a wrong answer";
      report(g);
    }
  });
  if (!ran || ::testing::Test::HasFailure()) return;

  BandwidthFigures b;
  b.variant = C::variant();
  b.n = n;
  b.ceiling_gbps = ceiling;
  b.result = result;
  b.theoretical_gbps = info.theoretical_gbps();
  b.device = info.name;
  b.graded = C::kGraded;
  record_bandwidth(b);
}

}  // namespace lab::test
