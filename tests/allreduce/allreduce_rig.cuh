// Lab 12's cases as the trusted checker makes them (checker-gpu_allreduce):
// every GPU's input, output and workspace is the checker's own memory, made on
// that GPU with the driver's VMM API and granted to every GPU of the call, in
// the checker's mapping and in the runner's (shared_memory.hpp); the lab's
// code runs in the runner and is given one record per rank (call_spec.hpp).
// The checker fills the inputs, poisons the outputs, computes the rank-order
// sum itself and reads every output back from its own mappings.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "allreduce_contract.cuh"
#include "allreduce_device_work.hpp"
#include "call_spec.hpp"
#include "cuda_check.cuh"
#include "device_shared.cuh"
#include "failure_report.hpp"
#include "not_implemented.hpp"
#include "runner_link.hpp"
#include "test_env.hpp"

namespace lab::test::allreduce {

using A = AllreduceAlgorithm;

inline constexpr std::uint32_t kPoison = 0x7FBADBADu;  // a NaN no input makes: an unwritten output

// GPUs usable together: the first ones with peer access between every pair.
struct Machine {
  int gpus = 0;
  std::string why;  // why no more are used
};

inline const Machine& machine() {
  static const Machine m = [] {
    Machine m;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();  // the answer is "no GPU", said below
      m.why = "no usable CUDA GPU";
      return m;
    }
    m.gpus = std::min(count, kAllreduceMaxGpus);
    for (int a = 0; a < m.gpus; ++a)
      for (int b = 0; b < m.gpus; ++b) {
        if (a == b) continue;
        int can = 0;
        CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
        if (!can) {
          m.why = "GPU " + std::to_string(a) + " cannot reach GPU " + std::to_string(b) +
                  "'s memory (no P2P)";
          m.gpus = 1;
          return m;
        }
      }
    if (m.gpus < 2) m.why = "this machine has " + std::to_string(count) + " GPU";
    // Every GPU's context before any memory is mapped for it (vmm.hpp grants
    // access per device).
    for (int d = 0; d < m.gpus; ++d) {
      CUDA_CHECK(cudaSetDevice(d));
      CUDA_CHECK(cudaFree(nullptr));
    }
    CUDA_CHECK(cudaSetDevice(0));
    return m;
  }();
  return m;
}

#define NEED_GPUS(g)                                                             \
  do {                                                                           \
    if (::lab::test::allreduce::machine().gpus < (g))                            \
      GTEST_SKIP() << "needs " << (g) << " GPUs with peer access between them; " \
                   << ::lab::test::allreduce::machine().why;                     \
  } while (0)

// Every GPU of a call of `gpus` GPUs (0 .. gpus-1), a bit each.
inline std::uint32_t span(int gpus) { return (std::uint32_t{1} << gpus) - 1; }

// The checker's own GPU work (fills, poison) is done before the lab's code
// starts on the same memory: the runner's streams do not wait for ours.
inline void settle(int gpus) {
  for (int d = 0; d < gpus; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  CUDA_CHECK(cudaSetDevice(0));
}

inline void run_remote(const std::vector<Invocation>& calls, int gpus) {
  settle(gpus);
  RunnerLink::get().run(calls);
}

inline std::size_t workspace_bytes(std::size_t n, int gpus) {
  // The contract leaves the size to the lab; beyond the input twice plus 1 GiB is refused.
  return RunnerLink::get().workspace_bytes(Fn::kAllreduce, static_cast<std::uint32_t>(gpus), n,
                                           (std::size_t{1} << 30) + 2 * n * sizeof(float));
}

// Special values planted at positions of GPU `rank`'s input, on top of the hash.
struct Plant {
  int rank;
  std::size_t i;
  float value;
};

// What verify() found wrong.
struct Mismatch {
  std::string expected, got, explain, hint;
};

// Runs `body` (which calls the lab's code) and turns what can go wrong into
// the case's hint; false when the case has been reported.
template <class Body>
bool guarded(CaseFailure f, Body&& body) {
  try {
    body();
    return true;
  } catch (const NotImplemented& e) {
    f.hint = hint::kNotImplemented;
    f.explain = std::string(e.what()) + ": write the fenced code";
  } catch (const RunnerError& e) {
    f.hint = e.hint();
    f.explain = e.what();
    if (e.hint() == "timed_out")
      f.explain += ": a hang, a barrier nobody reaches: some GPU's blocks wait for a flag that "
                   "never comes (a peer that never signals, or a count it never reaches)";
  } catch (const CudaError& e) {
    f.hint = hint::kCheckerError;
    f.explain = std::string("the checker itself failed: ") + e.what();
  }
  report(f);
  return false;
}

// One all-reduce's buffers on each of `gpus` GPUs: inputs, outputs (or none,
// in place), a workspace zeroed once when it is made. `offset` floats past the
// allocation's start: 16-byte alignment is lost when it is not a multiple of 4.
// Each buffer has one float more than the call uses: a write past the end shows.
class Case {
 public:
  Case(int gpus, std::size_t n, bool in_place, std::size_t offset = 0)
      : gpus_(gpus), n_(n), in_place_(in_place), offset_(offset) {
    const std::uint32_t access = gpus > 1 ? span(gpus) : 0;
    for (int r = 0; r < gpus; ++r) {
      in_.emplace_back(n + offset + 1, r, access);
      if (!in_place) out_.emplace_back(n + offset + 1, r, access);
    }
  }

  int gpus() const { return gpus_; }
  std::size_t n() const { return n_; }
  bool in_place() const { return in_place_; }
  float* in(int r) const { return in_[r].get() + offset_; }
  float* out(int r) const { return in_place_ ? in(r) : out_[r].get() + offset_; }

  // The workspaces, as the contract hands them over: asked of the lab's code,
  // zeroed once here. Talks to the runner: call it inside guarded().
  void make_workspaces() {
    const std::size_t bytes = workspace_bytes(n_, gpus_);
    const std::uint32_t access = gpus_ > 1 ? span(gpus_) : 0;
    ws_.clear();
    for (int r = 0; r < gpus_; ++r) {
      ws_.emplace_back(bytes, r, access);
      CUDA_CHECK(cudaSetDevice(r));
      CUDA_CHECK(cudaMemset(ws_.back().get(), 0, ws_.back().bytes()));
    }
    settle(gpus_);
  }

  void fill(std::uint64_t seed, const std::vector<Plant>& plants = {}) {
    seed_ = seed;
    plants_ = plants;
    for (int r = 0; r < gpus_; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      fill_input(in(r), n_, seed, r);
      if (!in_place_)
        fill_words(reinterpret_cast<std::uint32_t*>(out_[r].get()), out_[r].size(), kPoison);
    }
    settle(gpus_);  // the hash is in place before the plants go on top of it
    for (const Plant& p : plants)
      CUDA_CHECK(cudaMemcpy(in(p.rank) + p.i, &p.value, sizeof(float), cudaMemcpyHostToDevice));
  }

  // The records of one call (call_spec.hpp) on each GPU's stream `stream`;
  // `told` is the GPU count the lab's code is given (the call's own by default).
  std::vector<Invocation> call(A algorithm, std::uint32_t stream = 0, int told = -1) const {
    std::vector<Invocation> v(static_cast<std::size_t>(gpus_));
    for (int r = 0; r < gpus_; ++r) {
      Invocation& c = v[r];
      c.fn = Fn::kAllreduce;
      c.arg = static_cast<std::uint32_t>(algorithm);
      c.stream = stream;
      c.device = static_cast<std::uint32_t>(r);
      c.n = n_;
      c.in = in(r);
      c.out = out(r);
      c.scratch = ws_.empty() ? nullptr : ws_[r].get();
    }
    v[0].ranks = static_cast<std::uint32_t>(gpus_);
    v[0].gpus = static_cast<std::uint32_t>(told < 0 ? gpus_ : told);
    return v;
  }

  float input(int r, std::size_t i) const {
    float x = input_at(seed_, r, i);
    for (const Plant& p : plants_)
      if (p.rank == r && p.i == i) x = p.value;
    return x;
  }

  // Empty when every output holds the rank-order sum bit for bit (NaN matches
  // any NaN), the float past each output still holds the poison and, out of
  // place, every input is unchanged; else the first difference.
  std::vector<Mismatch> verify() const {
    std::vector<float> want(n_), got(n_ + 1);
    for (std::size_t i = 0; i < n_; ++i) {
      float sum = input(0, i);
      for (int h = 1; h < gpus_; ++h) sum += input(h, i);
      want[i] = sum;
    }
    for (int r = 0; r < gpus_; ++r) {
      const std::size_t read = in_place_ ? n_ : n_ + 1;
      CUDA_CHECK(cudaMemcpy(got.data(), out(r), read * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n_; ++i) {
        const bool same = (std::isnan(want[i]) && std::isnan(got[i])) ||
                          std::memcmp(&want[i], &got[i], sizeof(float)) == 0;
        if (!same) return {output_mismatch(r, i, want[i], got[i])};
      }
      if (!in_place_ && bits(got[n_]) != kPoison)
        return {{show(poison()), show(got[n_]),
                 "GPU " + std::to_string(r) + " wrote the float just past its output's end",
                 hint::kWrongValue}};
      if (in_place_) continue;
      CUDA_CHECK(cudaMemcpy(got.data(), in(r), n_ * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n_; ++i) {
        const float was = input(r, i);
        if (std::memcmp(&got[i], &was, sizeof was) != 0)
          return {{show(was), show(got[i]),
                   "GPU " + std::to_string(r) + "'s input at " + std::to_string(i) +
                       " was overwritten: an out-of-place call must leave its inputs alone",
                   hint::kInputModified}};
      }
    }
    return {};
  }

 private:
  static std::uint32_t bits(float f) {
    std::uint32_t b = 0;
    std::memcpy(&b, &f, sizeof b);
    return b;
  }
  static float poison() {
    float f = 0;
    std::memcpy(&f, &kPoison, sizeof f);
    return f;
  }
  static std::string show(float f) {
    char text[64];
    std::snprintf(text, sizeof text, "%.9g (0x%08x)", f, bits(f));
    return text;
  }
  Mismatch output_mismatch(int r, std::size_t i, float want, float got) const {
    const bool never = bits(got) == kPoison;
    std::string explain = "GPU " + std::to_string(r) + "'s output at " + std::to_string(i) +
                          " of " + std::to_string(n_);
    explain += never ? " still holds the poison: nothing wrote it"
                     : " is not the rank-order sum ((in_0 + in_1) + in_2) + ... of the inputs";
    return {show(want), show(got), explain, never ? hint::kNeverWritten : hint::kWrongValue};
  }

  int gpus_;
  std::size_t n_;
  bool in_place_;
  std::size_t offset_;
  std::uint64_t seed_ = 0;
  std::vector<Plant> plants_;
  std::vector<DeviceShared<float>> in_, out_;
  std::vector<DeviceShared<unsigned char>> ws_;
};

inline std::string variant_of(A algorithm, bool in_place, int gpus, std::size_t offset = 0) {
  std::string v = std::string(algorithm_name(algorithm)) +
                  (in_place ? ", in place" : ", out of place") + ", " + std::to_string(gpus) +
                  " GPU" + (gpus == 1 ? "" : "s");
  if (offset % 4 != 0) v += ", buffers one float past a 16-byte boundary";
  return v;
}

// Fills and poisons before each of `times` calls on one workspace (so that a
// call which leaves the last call's sums in place shows, and an in-place call
// gets its input back), and checks every output after each call.
inline void run_and_check(Case& c, A algorithm, std::uint64_t seed, const std::string& input,
                          const std::vector<Plant>& plants = {}, int times = 2,
                          std::size_t offset = 0) {
  CaseFailure f;
  f.n = c.n();
  f.input = input;
  f.seed = seed;
  f.variant = variant_of(algorithm, c.in_place(), c.gpus(), offset);
  ::testing::Test::RecordProperty("n", std::to_string(c.n()));
  for (int k = 0; k < times; ++k) {
    f.call = k + 1;
    const bool ran = guarded(f, [&] {
      if (k == 0) c.make_workspaces();
      c.fill(seed, plants);
      run_remote(c.call(algorithm), c.gpus());
    });
    if (!ran) return;
    const std::vector<Mismatch> bad = c.verify();
    if (!bad.empty()) {
      f.expected = bad[0].expected;
      f.got = bad[0].got;
      f.hint = bad[0].hint;
      f.explain = bad[0].explain + " (call " + std::to_string(k + 1) + " of " +
                  std::to_string(times) + " on one workspace)";
      report(f);
      return;
    }
  }
}

}  // namespace lab::test::allreduce
