// The correctness checks every GPU reduction contract gets, written once over
// a traits struct (contracts.cuh). A case: a seeded input between guard bands,
// the output poisoned and the workspace zeroed (the contract's rule, in
// sum_contract.cuh), three calls (the second finds the first call's result in
// *out, so an output that is not reset shows), then a
// fourth after one element changed (an answer remembered from the same
// pointer and size is wrong now), the input checked unchanged afterwards,
// the CPU reference as the answer. Under compute-sanitizer's racecheck the
// first call only (test_env.hpp's first_call_only says why).
//
// The lab's code runs in the runner (runner_link.hpp); every buffer it gets
// is shared memory the checker owns, and the checker reads *out itself.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "contracts.cuh"
#include "cuda_stream.cuh"
#include "device_info.hpp"
#include "device_shared.cuh"
#include "failure_report.hpp"
#include "guarded_input.cuh"
#include "not_implemented.hpp"
#include "planted_copies.hpp"
#include "read_back.cuh"
#include "remote_contract.cuh"
#include "sum_sizes.hpp"
#include "test_env.hpp"
#include "wire.hpp"

namespace lab::test {

template <class T>
T poison_value() {
  T v;
  std::memcpy(&v, &kPoisonBits, sizeof v);
  return v;
}

template <class T>
T read_back(const T* device) {
  T host{};
  CUDA_CHECK(cudaMemcpy(&host, device, sizeof host, cudaMemcpyDeviceToHost));
  return host;
}

// Runs `body` (which calls the lab's code) and turns what can go wrong into
// the case's hint; returns false when the case has already been reported.
template <class Body>
bool guarded_calls(CaseFailure f, Body&& body) {
  try {
    body();
    return true;
  } catch (const NotImplemented& e) {
    f.hint = hint::kNotImplemented;
    f.explain = std::string(e.what()) + ": write the fenced region";
  } catch (const RunnerError& e) {
    f.hint = e.hint();
    f.explain = e.what();
  } catch (const CudaError& e) {
    // The checker's own CUDA call failed: the machine's fault, not the lab's.
    f.hint = hint::kCheckerError;
    f.explain = std::string("the checker itself failed: ") + e.what();
  }
  report(f);
  return false;
}

// One more call, with a new zeroed workspace: tells state left in the
// workspace (right again now) from a race (as likely wrong as before).
template <class C>
bool right_with_fresh_workspace(const typename C::T* in, std::size_t n, typename C::T expected,
                                cudaStream_t stream) {
  using T = typename C::T;
  try {
    DeviceShared<T> out(1);
    DeviceShared<unsigned char> workspace = new_workspace<C>(n, stream);
    out.fill_bytes(kPoisonBits & 0xff, stream);
    run_remote({call_of<C>(in, n, out.get(), workspace.get())});
    return C::same(read_back(out.get()), expected);
  } catch (const std::exception&) {
    return false;  // the case is reported as it was; this call only refines the hint
  }
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
  f.variant = C::variant();
  ::testing::Test::RecordProperty("n", std::to_string(n));
  ::testing::Test::RecordProperty("input", f.input);

  CudaStream stream;
  GuardedInput<T, typename C::Input> input(spec, n, C::kGuardBefore, C::kGuardAfter, stream, shift);
  const typename C::Exact exact = C::exact(spec);
  const T expected = C::expected_of(exact);
  f.expected = C::show(expected);

  DeviceShared<T> out(1);
  DeviceShared<unsigned char> workspace;
  T got[4] = {};
  PlantedCopies<C> changed(spec, exact, 1, case_seed(n, 0xc4a9));
  const typename PlantedCopies<C>::Write plant = changed.replant(0);
  unsigned long long input_changes = 0;
  // Each call's result is read back together with what the next call needs
  // (read_back.cuh): call 2 finds call 1's result in *out, call 3 a poisoned
  // *out, call 4 one element of the input planted; after it the element is put
  // back and the input and its guards are counted, all in one wait.
  const int calls = first_call_only() ? 1 : 4;
  const bool ran = guarded_calls(f, [&] {
    workspace = new_workspace<C>(n, stream);
    out.fill_bytes(kPoisonBits & 0xff, stream);
    for (int call = 0; call < calls; ++call) {
      run_remote({call_of<C>(input.data(), n, out.get(), workspace.get())});
      ReadBack after(stream);
      const T* result = after.copy(out.get());
      const unsigned long long* counted = nullptr;
      if (call == 1 || call == 2) out.fill_bytes(kPoisonBits & 0xff, stream);
      if (call == 2) write_element(input.data() + plant.at, plant.value, stream);
      if (call == 3) write_element(input.data() + plant.at, spec.at(plant.at), stream);
      if (call == calls - 1) {
        unsigned long long* counter = change_counter();
        CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof *counter, stream));
        input.queue_changes(counter, stream);
        counted = after.copy(static_cast<const unsigned long long*>(counter));
      }
      after.wait();
      got[call] = *result;
      if (counted != nullptr) input_changes = *counted;
    }
  });
  if (!ran) return;

  if (calls == 4 && !C::same(got[0], got[2])) {
    f.got = C::show(got[0]) + ", then " + C::show(got[2]);
    f.call = C::same(got[0], expected) ? 3 : 1;
    if (C::same(got[0], expected) &&
        right_with_fresh_workspace<C>(input.data(), n, expected, stream)) {
      f.hint = hint::kWorkspaceNotReady;
      f.explain = "right on call 1, wrong on call 3, right again with a freshly zeroed workspace: "
                  "the workspace is kept between calls, so what a call leaves there (a count of "
                  "finished blocks, a running total) is what the next call finds; the last block "
                  "must put it back to zero";
      return report(f);
    }
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
  if (calls == 4 && !C::same(got[1], expected)) {
    f.got = C::show(got[1]);
    f.call = 2;
    f.hint = hint::kNotReset;
    f.explain = "right on the first call, wrong on the second, which found the first call's "
                "result in *out: reset the output inside the call";
    return report(f);
  }
  if (calls == 4 && !C::same(got[3], changed.expected(0))) {
    f.expected = C::show(changed.expected(0));
    f.got = C::show(got[3]);
    f.call = 4;
    const bool stale = C::same(got[3], expected);
    f.hint = stale ? hint::kStaleResult : hint::kWrongValue;
    f.explain = stale ? "after one element of the input changed (same pointer, same size), the "
                        "call returned the old answer: compute the result on every call"
                      : "wrong after one element of the input changed between calls";
    return report(f);
  }
  if (input_changes != 0) {
    f.hint = hint::kInputModified;
    f.explain = std::to_string(input_changes) +
                " input or guard elements were overwritten: the "
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
      if (!::testing::Test::HasFailure())
        check_case<C>(C::patterns()[n % C::patterns().size()], n, shift);
}

// n == 0 writes the identity (0 for sum, -inf for max).
template <class C>
void check_empty() {
  using T = typename C::T;
  ::testing::Test::RecordProperty("n", "0");
  CudaStream stream;
  DeviceShared<T> in(1), out(1);
  DeviceShared<unsigned char> workspace;
  T got{};
  CaseFailure f;
  f.input = "empty";
  f.variant = C::variant();
  const bool ran = guarded_calls(f, [&] {
    workspace = new_workspace<C>(0, stream);
    out.fill_bytes(kPoisonBits & 0xff, stream);
    run_remote({call_of<C>(in.get(), 0, out.get(), workspace.get())});
    got = read_back(out.get());
  });
  if (!ran) return;
  if (!C::same(got, C::identity())) {
    f.expected = C::show(C::identity());
    f.got = C::show(got);
    f.call = 1;
    f.hint = C::same(got, poison_value<T>()) ? hint::kNeverWritten : hint::kWrongIdentity;
    f.explain = std::string("the contract defines the ") + C::kWhat + " of no elements as " +
                C::show(C::identity()) + ", its identity";
    report(f);
  }
}

// Sizes drawn log-uniformly from [1, 2^24], one in each band (seeded_sizes),
// with the run's seed (printed first).
template <class C>
void check_random_sizes(int count) {
  std::mt19937_64 rng(case_seed(0x5e5e));
  const std::vector<std::size_t> sizes = seeded_sizes(rng, count, 24.0);
  const auto patterns = C::patterns();
  for (std::size_t k = 0; k < sizes.size() && !::testing::Test::HasFailure(); ++k) {
    SCOPED_TRACE("random size n=" + std::to_string(sizes[k]));
    check_case<C>(patterns[k % patterns.size()], sizes[k]);
  }
}

// Two calls in flight at once, on two streams, into separate outputs and
// workspaces: the contract is asynchronous, and nothing may be shared
// between calls (a static buffer, the default stream, a global result).
template <class C>
void check_two_streams() {
  using T = typename C::T;
  constexpr std::size_t kN = (std::size_t{1} << 22) + 3;
  CudaStream stream;
  const typename C::Input specs[2] = {C::bandwidth_input(case_seed(1, 2), kN),
                                      C::bandwidth_input(case_seed(3, 4), kN)};
  DeviceShared<T> inputs[2] = {DeviceShared<T>(kN), DeviceShared<T>(kN)};
  DeviceShared<T> outs[2] = {DeviceShared<T>(1), DeviceShared<T>(1)};
  DeviceShared<unsigned char> workspaces[2];
  ::testing::Test::RecordProperty("n", std::to_string(kN));
  CaseFailure f;
  f.n = kN;
  f.input = pattern_name(specs[0].pattern);
  f.variant = "two streams";
  const bool ran = guarded_calls(f, [&] {
    for (int s = 0; s < 2; ++s) {
      workspaces[s] = new_workspace<C>(kN, stream);
      generate(inputs[s].get(), kN, specs[s], stream);
      outs[s].fill_bytes(kPoisonBits & 0xff, stream);
    }
    std::vector<Invocation> calls;
    for (int rep = 0; rep < 4; ++rep)
      for (std::uint32_t s = 0; s < 2; ++s)
        calls.push_back(call_of<C>(inputs[s].get(), kN, outs[s].get(), workspaces[s].get(), s));
    run_remote(calls);
  });
  if (!ran) return;
  for (int s = 0; s < 2; ++s) {
    const T got = read_back(outs[s].get());
    const T expected = C::reference(specs[s]);
    if (!C::same(got, expected))
      report({kN, f.input, specs[s].seed, "stream " + std::to_string(s + 1) + " of 2",
              C::show(expected), C::show(got), 4, hint::kSharedState,
              "two calls on two streams at once interfered: keep all state in the caller's "
              "output and workspace, and queue every operation on the caller's stream"});
  }
}

// Many calls on one workspace, the input alternating between two: a pass that
// reads the partial sums of the pass before it before every block has written
// them (a grid launched before its parent has finished) finds the other
// input's partials there, so each call the race strikes gives a wrong answer.
// The edge-size cases repeat one input, where a stale partial is the right
// one, and catch such a race only on a case's first call, so a racing lab
// passes them in some runs (docs/decisions.md, "Many calls on one workspace,
// two inputs in turn"). kBatches of wire::kMaxCalls
// calls, each into an output of its own, read back after each batch.
template <class C>
void check_alternating_inputs() {
  using T = typename C::T;
  // Thousands of blocks in any lab's grid, so many waves: a pass launched
  // early finds blocks of the pass before it still running.
  constexpr std::size_t kN = (std::size_t{1} << 22) + 5;
  constexpr int kBatches = 4;
  constexpr std::size_t kCalls = wire::kMaxCalls;
  CudaStream stream;
  const typename C::Input specs[2] = {C::bandwidth_input(case_seed(kN, 5), kN),
                                      C::bandwidth_input(case_seed(kN, 6), kN)};
  const T expected[2] = {C::expected_of(C::exact(specs[0])), C::expected_of(C::exact(specs[1]))};
  DeviceShared<T> inputs[2] = {DeviceShared<T>(kN), DeviceShared<T>(kN)};
  DeviceShared<T> outs(kCalls);
  DeviceShared<unsigned char> workspace;
  std::vector<T> got(kCalls);
  ::testing::Test::RecordProperty("n", std::to_string(kN));
  CaseFailure f;
  f.n = kN;
  f.input = std::string(pattern_name(specs[0].pattern)) + ", two inputs taking turns";
  f.variant = C::variant();
  for (int batch = 0; batch < kBatches; ++batch) {
    const bool ran = guarded_calls(f, [&] {
      if (batch == 0) {
        workspace = new_workspace<C>(kN, stream);
        for (int s = 0; s < 2; ++s) generate(inputs[s].get(), kN, specs[s], stream);
      }
      outs.fill_bytes(kPoisonBits & 0xff, stream);
      std::vector<Invocation> calls;
      for (std::size_t k = 0; k < kCalls; ++k)
        calls.push_back(call_of<C>(inputs[k % 2].get(), kN, outs.get() + k, workspace.get()));
      run_remote(calls);
      CUDA_CHECK(cudaMemcpy(got.data(), outs.get(), kCalls * sizeof(T), cudaMemcpyDeviceToHost));
    });
    if (!ran) return;
    for (std::size_t k = 0; k < kCalls; ++k) {
      if (C::same_timed(got[k], expected[k % 2])) continue;
      f.seed = specs[k % 2].seed;
      f.expected = C::show(expected[k % 2]);
      f.got = C::show(got[k]);
      f.call = static_cast<int>(batch * kCalls + k + 1);
      if (C::same(got[k], poison_value<T>())) {
        f.hint = hint::kNeverWritten;
        f.explain = "call " + std::to_string(f.call) + " of " + std::to_string(kBatches * kCalls) +
                    " left its output holding the poison value 0xA5A5A5A5: nothing wrote *out";
        return report(f);
      }
      f.hint = hint::kDiffersBetweenCalls;
      f.explain = "wrong on call " + std::to_string(f.call) + " of " +
                  std::to_string(kBatches * kCalls) +
                  ", two inputs taking turns with one workspace: most often a pass that read "
                  "the partial sums of the pass before it too early (a grid launched before "
                  "every block of the one before had written them) and found the other "
                  "input's";
      return report(f);
    }
  }
}

// Above 2^32 elements, where any 32-bit index overflows.
template <class C>
void check_huge() {
  const DeviceInfo info = query_device();
  const std::size_t need =
      (kHugeSize + 2 * kGuardElements) * sizeof(typename C::T) + (std::size_t{1} << 30);
  // A GPU too small for the case skips it (said in the report). A GPU big
  // enough that lacks the free memory now (other processes on it: a batch runs
  // several students per GPU) is the machine's fault, never a pass by luck.
  if (info.global_mem_bytes < need + (std::size_t{2} << 30))
    GTEST_SKIP() << "needs " << need / (1u << 30) << " GiB of GPU memory, this GPU has "
                 << info.global_mem_bytes / (1u << 30) << " GiB";
  if (info.free_mem_bytes < need) {
    CaseFailure f;
    f.n = kHugeSize;
    f.input = pattern_name(C::patterns().front());
    f.variant = C::variant();
    f.hint = hint::kCheckerError;
    f.explain = "the checker itself failed: the GPU has " +
                std::to_string(info.free_mem_bytes >> 30) + " GiB free, the case needs " +
                std::to_string(need >> 30) + " GiB (other processes hold the rest)";
    return report(f);
  }
  check_case<C>(C::patterns().front(), kHugeSize);
}

}  // namespace lab::test
