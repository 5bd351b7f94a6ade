// Lab 12's bandwidth test, as the trusted checker times it: algbw (bytes of
// one GPU's buffer / time per call) of the lab's all-reduce (kAuto, out of
// place) over every GPU the checker uses, at 2^28 floats per GPU, as a fraction
// of the peer copy: cudaMemcpyPeerAsync of the same bytes from GPU 1 to GPU 0
// between the checker's own buffers, measured in this process before the lab's
// code runs (the runner is stopped first). For two GPUs that is the least
// traffic any all-reduce needs: each GPU must receive the other's n floats.
//
// The clock is the checker's: a batch of calls (each on inputs of its own,
// freshly made with a new seed, outputs poisoned) sent in one request, timed
// from the request to the reply and a check, on each GPU, of 4,096 elements of
// every timed output at places the runner cannot know (work left for after the
// reply shows there), batches of 10 ms or more, median of 9 (common/bench.hpp).
// Every output of every timed call is then checked on the GPU that holds it
// against the rank-order sum, bit for bit; no figure is reported for a wrong
// answer. The peer copy is
// timed by the same wall clock without the round trip to the runner (about
// 0.24 ms a batch on an H200, a few percent of a 10 ms batch): the fraction
// errs against the lab's code, never for it.
//
// The C++ reports the figure (bandwidth_report.hpp); the grader judges it
// against labs.toml's threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "allreduce_rig.cuh"
#include "bandwidth_report.hpp"
#include "bench.hpp"
#include "device_buffer.cuh"
#include "device_info.hpp"

namespace {

using namespace lab::test::allreduce;  // NOLINT: the suite's own vocabulary
using lab::test::CaseFailure;
using lab::test::DeviceShared;
using lab::test::Invocation;

constexpr std::size_t kN = std::size_t{1} << 28;  // floats per GPU
constexpr std::size_t kMaxCopies = 8;

// A wrong answer inside a timed batch: no figure, and the case is reported.
struct WrongTimedCall {
  int call = 0, gpu = 0;
  std::size_t at = 0;
  float expected = 0, got = 0;
  unsigned long long late = 0;  // sampled wrong in the window, right afterwards
};

void enable_peer(int from, int to) {
  CUDA_CHECK(cudaSetDevice(from));
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(cudaGetLastError());
  else CUDA_CHECK(e);
  CUDA_CHECK(cudaSetDevice(0));
}

// GB/s of cudaMemcpyPeerAsync, GPU 1 to GPU 0, `bytes` at a time, on the
// checker's own buffers; peer access on, so that the copy goes over the link.
double peer_copy_gbps(std::size_t bytes) {
  enable_peer(0, 1);
  enable_peer(1, 0);
  CUDA_CHECK(cudaSetDevice(1));
  lab::DeviceBuffer<unsigned char> src(bytes);
  CUDA_CHECK(cudaMemset(src.get(), 0x3c, bytes));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaSetDevice(0));
  lab::DeviceBuffer<unsigned char> dst(bytes);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  lab::BenchConfig config;
  config.min_batch_ms = 10.0;
  const lab::BenchResult r = lab::bench_calls(
      [&](long, int count) {
        const lab::WallTimer timer;
        for (int k = 0; k < count; ++k)
          CUDA_CHECK(cudaMemcpyPeerAsync(dst.get(), 0, src.get(), 1, bytes, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        return timer.ms();
      },
      bytes, config);
  CUDA_CHECK(cudaStreamDestroy(stream));
  return r.gbps();
}

std::size_t least_free_bytes(int gpus) {
  std::size_t least = ~std::size_t{0};
  for (int d = 0; d < gpus; ++d) least = std::min(least, lab::query_device(d).free_mem_bytes);
  CUDA_CHECK(cudaSetDevice(0));  // query_device leaves its device current
  return least;
}

// One batch's buffers: copy c's input and output on every GPU.
struct Copies {
  std::vector<std::vector<DeviceShared<float>>> in, out;  // [copy][rank]
};

TEST(AllreduceBandwidth, AlgbwOverPeerCopy) {
  NEED_GPUS(2);
  if (lab::test::perf_disabled())
    GTEST_SKIP() << "performance checks are off (LAB_SKIP_PERF is set)";
  const int g = machine().gpus;
  const std::size_t bytes = kN * sizeof(float);
  // The yardstick first, with no process of the lab's alive.
  lab::test::RunnerLink::get().stop();
  const double ceiling = peer_copy_gbps(bytes);

  CaseFailure f;
  f.n = kN;
  f.input = "random, timed";
  f.seed = lab::test::case_seed(kN, 0xba);
  f.variant = variant_of(A::kAuto, false, g);
  std::vector<DeviceShared<unsigned char>> ws;
  Copies copies;
  lab::BenchResult result;
  const bool ran = guarded(f, [&] {
    const std::size_t ws_bytes = workspace_bytes(kN, g);
    for (int r = 0; r < g; ++r) {
      ws.emplace_back(ws_bytes, r, span(g));
      CUDA_CHECK(cudaSetDevice(r));
      CUDA_CHECK(cudaMemset(ws.back().get(), 0, ws.back().bytes()));
    }
    settle(g);
    // Room for the copies on the GPU with the least free memory, leaving a fifth.
    const std::size_t count =
        std::min({kMaxCopies, lab::wire::kMaxCalls / static_cast<std::size_t>(g),
                  least_free_bytes(g) * 4 / 5 / (2 * bytes)});
    if (count < 1) throw lab::CudaError(cudaErrorMemoryAllocation, "no room for one copy");
    copies.in.resize(count);
    copies.out.resize(count);
    for (std::size_t c = 0; c < count; ++c)
      for (int r = 0; r < g; ++r) {
        copies.in[c].emplace_back(kN, r, span(g));
        copies.out[c].emplace_back(kN, r, span(g));
      }
    std::vector<lab::DeviceBuffer<unsigned long long>> counters;
    for (int r = 0; r < g; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      counters.emplace_back(2);
    }
    CUDA_CHECK(cudaSetDevice(0));

    auto time_calls = [&](long first, int n_calls) -> double {
      std::vector<std::uint64_t> seeds;
      std::vector<Invocation> calls;
      for (int c = 0; c < n_calls; ++c) {
        seeds.push_back(lab::test::case_seed(kN, 0xba00 + static_cast<std::uint64_t>(first + c)));
        for (int r = 0; r < g; ++r) {
          CUDA_CHECK(cudaSetDevice(r));
          fill_input(copies.in[c][r].get(), kN, seeds.back(), r);
          fill_words(reinterpret_cast<std::uint32_t*>(copies.out[c][r].get()), kN, kPoison);
          Invocation v;
          v.fn = lab::test::Fn::kAllreduce;
          v.arg = static_cast<std::uint32_t>(A::kAuto);
          v.device = static_cast<std::uint32_t>(r);
          v.n = kN;
          v.in = copies.in[c][r].get();
          v.out = copies.out[c][r].get();
          v.scratch = ws[r].get();
          v.ranks = r == 0 ? static_cast<std::uint32_t>(g) : 1;
          v.gpus = r == 0 ? static_cast<std::uint32_t>(g) : 0;
          calls.push_back(v);
        }
      }
      settle(g);
      const lab::WallTimer timer;
      lab::test::RunnerLink::get().run(calls);
      // Inside the window: every timed output sampled where the runner cannot
      // know, so that work left for after the reply (a thread of the runner's
      // that finishes the outputs while they are checked) counts as wrong.
      unsigned long long sampled_wrong = 0;
      for (int r = 0; r < g; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaMemsetAsync(counters[r].get(), 0, sizeof(unsigned long long)));
        for (int c = 0; c < n_calls; ++c)
          count_wrong_sampled(copies.out[c][r].get(), kN, seeds[c], g,
                              lab::test::case_seed(kN, 0x5a0000 + first * 64 + c * 8 + r),
                              counters[r].get());
      }
      for (int r = 0; r < g; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        unsigned long long wrong = 0;
        CUDA_CHECK(cudaMemcpy(&wrong, counters[r].get(), sizeof wrong, cudaMemcpyDeviceToHost));
        sampled_wrong += wrong;
      }
      const double ms = timer.ms();
      for (int c = 0; c < n_calls; ++c)
        for (int r = 0; r < g; ++r) {
          CUDA_CHECK(cudaSetDevice(r));
          const WrongCount found =
              count_wrong(copies.out[c][r].get(), kN, seeds[c], g, counters[r].get());
          if (found.count == 0) continue;
          WrongTimedCall w{c + 1, r, static_cast<std::size_t>(found.first), 0, 0};
          w.expected = input_at(seeds[c], 0, w.at);
          for (int h = 1; h < g; ++h) w.expected += input_at(seeds[c], h, w.at);
          CUDA_CHECK(cudaMemcpy(&w.got, copies.out[c][r].get() + w.at, sizeof w.got,
                                cudaMemcpyDeviceToHost));
          CUDA_CHECK(cudaSetDevice(0));
          throw w;
        }
      CUDA_CHECK(cudaSetDevice(0));
      if (sampled_wrong != 0) {
        WrongTimedCall w;
        w.late = sampled_wrong;
        throw w;
      }
      return ms;
    };
    lab::BenchConfig config;
    // The batch is sized from one call that paid the round trip alone: asking
    // for 12 ms gives batches of 10 ms or more (3 calls of 3.3 ms on two H200s).
    config.min_batch_ms = 12.0;
    config.max_calls_per_batch = static_cast<int>(count);
    try {
      result = lab::bench_calls(time_calls, bytes, config);
    } catch (const WrongTimedCall& w) {
      CaseFailure h = f;
      h.call = w.call;
      h.expected = std::to_string(w.expected);
      h.got = std::to_string(w.got);
      h.hint = lab::test::hint::kWrongValue;
      h.explain = "GPU " + std::to_string(w.gpu) + "'s output at " + std::to_string(w.at) +
                  " of a timed call is not the rank-order sum; no bandwidth is reported for a "
                  "wrong answer";
      if (w.late != 0) {
        h.call = 0;
        h.expected = "every output complete when the call returns";
        h.got = std::to_string(w.late) + " sampled outputs still wrong then, right later";
        h.explain = "work went on after allreduce_sum returned and its GPUs were synchronised "
                    "(another thread?): a call's outputs must be complete when it returns; no "
                    "bandwidth is reported";
      }
      report(h);
    }
  });
  if (!ran || HasFailure()) return;

  lab::test::BandwidthFigures b;
  b.n = kN;
  b.result = result;
  b.ceiling_gbps = ceiling;
  b.device = lab::query_device(0).name + " x" + std::to_string(g);
  record_bandwidth(b);
  RecordProperty("gpus", std::to_string(g));
  RecordProperty("ceiling", "cudaMemcpyPeerAsync GPU 1 to GPU 0");
}

}  // namespace
