// The correctness checks every GPU reduction contract gets, written once over
// a traits struct (contracts.cuh). A case: a seeded input between guard bands,
// the output and the workspace poisoned, three calls (the second finds the
// first call's result in *out, so an output that is not reset shows), the
// input checked unchanged afterwards, the CPU reference as the answer.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "contracts.cuh"
#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "device_info.hpp"
#include "failure_report.hpp"
#include "guarded_input.cuh"
#include "not_implemented.hpp"
#include "sum_sizes.hpp"
#include "test_env.hpp"

namespace lab::test {

template <class T>
T poison_value() {
  T v;
  std::memcpy(&v, &kPoisonBits, sizeof v);
  return v;
}

template <class C>
void check_case(typename C::Pattern pattern, std::size_t n, std::size_t shift = 0) {
  using T = typename C::T;
  const std::uint64_t seed = case_seed(n, static_cast<std::uint64_t>(pattern));
  const typename C::Input spec = C::input(pattern, seed, n);
  CaseFailure f;
  f.n = n;
  f.input = pattern_name(pattern);
  if (shift) f.input += ", starting " + std::to_string(shift) + " elements past a 16-byte boundary";
  f.seed = seed;
  ::testing::Test::RecordProperty("n", std::to_string(n));
  ::testing::Test::RecordProperty("input", f.input);

  CudaStream stream;
  GuardedInput<T, typename C::Input> input(spec, n, C::kGuardBefore, C::kGuardAfter, stream, shift);
  const T expected = C::reference(spec);
  f.expected = C::show(expected);

  DeviceBuffer<T> out(1);
  T got[3] = {};
  try {
    DeviceBuffer<unsigned char> workspace(C::workspace_bytes(n));
    workspace.fill_bytes(kPoisonBits & 0xff, stream);
    for (int call = 0; call < 3; ++call) {
      if (call != 1) out.fill_bytes(kPoisonBits & 0xff, stream);
      C::run(input.data(), n, out.get(), workspace.get(), stream);
      CUDA_CHECK_LAUNCH();
      stream.synchronize();
      if (lab_todo_reached()) throw NotImplemented("a kernel still runs the skeleton's LAB_TODO()");
      CUDA_CHECK(cudaMemcpy(&got[call], out.get(), sizeof(T), cudaMemcpyDeviceToHost));
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

  if (!C::same(got[0], got[2])) {
    f.got = C::show(got[0]) + ", then " + C::show(got[2]);
    f.call = C::same(got[0], expected) ? 3 : 1;
    f.hint = hint::kDiffersBetweenCalls;
    f.explain = "the same input gave different results on calls 1 and 3: a race, most often "
                "a missing __syncthreads() between steps of the tree";
    return report(f);
  }
  if (!C::same(got[0], expected)) {
    f.got = C::show(got[0]);
    f.call = 1;
    if (C::same(got[0], poison_value<T>())) {
      f.hint = hint::kNeverWritten;
      f.explain = "the output still holds the poison value 0xA5A5A5A5: nothing wrote *out";
    } else {
      C::explain_wrong(expected, got[0], &f);
    }
    return report(f);
  }
  if (!C::same(got[1], expected)) {
    f.got = C::show(got[1]);
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

// Inputs that start 1, 2 or 3 elements past a 16-byte boundary, with sizes
// that are not multiples of 4: a kernel that loads 16 bytes at a time must
// handle a head and a tail with narrower loads.
template <class C>
void check_unaligned_starts() {
  for (const std::size_t shift : {1, 2, 3})
    for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5},
                                std::size_t{1001}, std::size_t{4099}, (std::size_t{1} << 20) + 2})
      if (!::testing::Test::HasFailure()) check_case<C>(C::patterns()[n % C::patterns().size()], n, shift);
}

// n == 0 writes the identity (0 for sum, -inf for max).
template <class C>
void check_empty() {
  using T = typename C::T;
  ::testing::Test::RecordProperty("n", "0");
  CudaStream stream;
  DeviceBuffer<T> in(1), out(1);
  T got{};
  try {
    DeviceBuffer<unsigned char> workspace(C::workspace_bytes(0));
    out.fill_bytes(kPoisonBits & 0xff, stream);
    C::run(in.get(), 0, out.get(), workspace.get(), stream);
    CUDA_CHECK_LAUNCH();
    stream.synchronize();
    CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
  } catch (const std::exception& e) {
    return report({0, "empty", 0, "", "", "", 0,
                   dynamic_cast<const NotImplemented*>(&e) ? hint::kNotImplemented : hint::kCudaError,
                   e.what()});
  }
  if (!C::same(got, C::identity()))
    report({0, "empty", 0, "", C::show(C::identity()), C::show(got), 1,
            C::same(got, poison_value<T>()) ? hint::kNeverWritten : hint::kWrongIdentity,
            std::string("the contract defines the ") + C::kWhat + " of no elements as " +
                C::show(C::identity()) + ", its identity"});
}

// Sizes drawn log-uniformly from [1, 2^24] with the run's seed (printed first).
template <class C>
void check_random_sizes(int count) {
  std::mt19937_64 rng(case_seed(0x5e5e));
  std::uniform_real_distribution<double> log2n(0.0, 24.0);
  const auto patterns = C::patterns();
  for (int k = 0; k < count && !::testing::Test::HasFailure(); ++k) {
    const auto n = static_cast<std::size_t>(std::exp2(log2n(rng))) + 1;
    SCOPED_TRACE("random size n=" + std::to_string(n));
    check_case<C>(patterns[k % patterns.size()], n);
  }
}

// Two calls in flight at once, on two streams, into separate outputs and
// workspaces: the contract is asynchronous, and nothing may be shared
// between calls (a static buffer, the default stream, a global result).
template <class C>
void check_two_streams() {
  using T = typename C::T;
  constexpr std::size_t kN = (std::size_t{1} << 22) + 3;
  CudaStream streams[2];
  const typename C::Input specs[2] = {C::bandwidth_input(case_seed(1, 2), kN),
                                      C::bandwidth_input(case_seed(3, 4), kN)};
  DeviceBuffer<T> inputs[2] = {DeviceBuffer<T>(kN), DeviceBuffer<T>(kN)};
  DeviceBuffer<T> outs[2] = {DeviceBuffer<T>(1), DeviceBuffer<T>(1)};
  ::testing::Test::RecordProperty("n", std::to_string(kN));
  try {
    DeviceBuffer<unsigned char> workspaces[2] = {DeviceBuffer<unsigned char>(C::workspace_bytes(kN)),
                                                 DeviceBuffer<unsigned char>(C::workspace_bytes(kN))};
    for (int s = 0; s < 2; ++s) {
      generate(inputs[s].get(), kN, specs[s], streams[s]);
      outs[s].fill_bytes(kPoisonBits & 0xff, streams[s]);
      workspaces[s].fill_bytes(kPoisonBits & 0xff, streams[s]);
      streams[s].synchronize();
    }
    for (int rep = 0; rep < 4; ++rep)
      for (int s = 0; s < 2; ++s) {
        C::run(inputs[s].get(), kN, outs[s].get(), workspaces[s].get(), streams[s]);
        CUDA_CHECK_LAUNCH();
      }
    for (int s = 0; s < 2; ++s) streams[s].synchronize();
    if (lab_todo_reached()) throw NotImplemented("a kernel still runs the skeleton's LAB_TODO()");
  } catch (const std::exception& e) {
    return report({kN, "random", 0, "two streams", "", "", 0,
                   dynamic_cast<const NotImplemented*>(&e) ? hint::kNotImplemented : hint::kCudaError,
                   e.what()});
  }
  for (int s = 0; s < 2; ++s) {
    T got{};
    CUDA_CHECK(cudaMemcpy(&got, outs[s].get(), sizeof got, cudaMemcpyDeviceToHost));
    const T expected = C::reference(specs[s]);
    if (!C::same(got, expected))
      report({kN, "random", specs[s].seed, "stream " + std::to_string(s + 1) + " of 2",
              C::show(expected), C::show(got), 4, hint::kSharedState,
              "two calls on two streams at once interfered: keep all state in the caller's "
              "output and workspace, and queue every operation on the caller's stream"});
  }
}

// Above 2^32 elements, where any 32-bit index overflows.
template <class C>
void check_huge() {
  const DeviceInfo info = query_device();
  const std::size_t need = (kHugeSize + 2 * kGuardElements) * sizeof(typename C::T) +
                           (std::size_t{1} << 30);
  if (info.free_mem_bytes < need)
    GTEST_SKIP() << "needs " << need / (1u << 30) << " GiB of free GPU memory, this GPU has "
                 << info.free_mem_bytes / (1u << 30) << " GiB free";
  check_case<C>(C::patterns().front(), kHugeSize);
}

}  // namespace lab::test
