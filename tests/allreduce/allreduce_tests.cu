// Tests of lab 12 (common/allreduce_contract.cuh) in the lab's own process,
// built once against the reference solution and once against the student's
// file: a quick look (tests/gpu_runs/lab12_gpu.sh) and the mutants' tests. The
// grade comes from the same cases behind the trusted checker/runner split
// (checker-gpu_allreduce: allreduce_checks.cu, allreduce_bandwidth.cu), where
// the lab's code cannot reach the buffers' owner, the expected sums or the clock.
//
// Every check is exact: the contract fixes the order of the additions (rank
// order), so every GPU must hold the host's rank-order sum bit for bit (NaN
// matches any NaN). Outputs are poisoned before each call; an out-of-place
// call must leave its inputs alone; every call is made twice on the same
// workspace. No GPU: exit 77 (skip) with the reason. One GPU: the contract's
// copy is tested and every multi-GPU test skips with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "allreduce_contract.cuh"
#include "allreduce_inputs.cuh"
#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "device_info.hpp"
#include "json.hpp"

namespace {

using lab::allreduce::fill_inputs;
using lab::allreduce::input_value;
using A = AllreduceAlgorithm;

constexpr std::uint32_t kPoison = 0x7FBADBADu;  // a NaN no input makes: an unwritten output shows

// GPUs usable together: the first ones with peer access between every pair.
struct Machine {
  int gpus = 0;
  std::string why;  // why no more are used
};

const Machine& machine() {
  static const Machine m = [] {
    Machine m;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
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
        CUDA_CHECK(cudaSetDevice(a));
        const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
        else CUDA_CHECK(e);
      }
    if (m.gpus < 2) m.why = "this machine has " + std::to_string(count) + " GPU";
    return m;
  }();
  return m;
}

#define NEED_GPUS(g)                                                                               \
  do {                                                                                             \
    if (machine().gpus < (g))                                                                      \
      GTEST_SKIP() << "needs " << (g) << " GPUs with peer access between them; " << machine().why; \
  } while (0)

// A call that does not end is a barrier nobody reaches: say so and stop,
// since a GPU left spinning cannot be taken back by anything in this process.
void wait_or_die(const std::vector<cudaStream_t>& streams, const std::vector<int>& devices) {
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t r = 0; r < streams.size(); ++r) {
    CUDA_CHECK(cudaSetDevice(devices[r]));
    for (;;) {
      const cudaError_t e = cudaStreamQuery(streams[r]);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) CUDA_CHECK(e);
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) {
        std::fprintf(stderr,
                     "FAILED: hang: GPU %d's part of the all-reduce has not ended after 20 s; "
                     "its blocks are waiting for a flag that never comes (a peer that never "
                     "signals, or a value it never reaches)\n",
                     devices[r]);
        std::fflush(stderr);
        _exit(1);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

bool todo_reached(int gpus) {
  for (int r = 0; r < gpus; ++r) {
    CUDA_CHECK(cudaSetDevice(r));
    int flag = 0;
    CUDA_CHECK(cudaMemcpy(&flag, lab_todo_flag_address(), sizeof flag, cudaMemcpyDeviceToHost));
    if (flag) return true;
  }
  return false;
}

// Special values planted at positions of GPU `rank`'s input, on top of the hash.
struct Plant {
  int rank;
  std::size_t i;
  float value;
};

// One all-reduce's buffers on each of `gpus` GPUs: inputs, outputs (or none,
// in place), a workspace zeroed once, a stream. `offset` floats past the
// allocation's start: 16-byte alignment lost when it is not a multiple of 4.
class Case {
 public:
  Case(int gpus, std::size_t n, bool in_place, std::size_t offset = 0)
      : gpus_(gpus), n_(n), in_place_(in_place), offset_(offset) {
    for (int r = 0; r < gpus; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      in_.emplace_back(n + offset + 1);
      out_.emplace_back(in_place ? 0 : n + offset + 1);
      ws_.emplace_back(allreduce_workspace_bytes(n, gpus));
      // On the legacy stream, which our streams do not wait for: the zeros must
      // be there before any call.
      ws_.back().fill_bytes(0);
      CUDA_CHECK(cudaDeviceSynchronize());
      cudaStream_t s = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      streams_.push_back(s);
      devices_.push_back(r);
    }
  }
  ~Case() {
    for (int r = 0; r < gpus_; ++r) {
      cudaSetDevice(r);
      cudaStreamDestroy(streams_[r]);
    }
  }
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;

  float* in(int r) const { return in_[r].get() + offset_; }
  float* out(int r) const { return in_place_ ? in(r) : out_[r].get() + offset_; }

  void fill(std::uint64_t seed, const std::vector<Plant>& plants = {}) {
    seed_ = seed;
    plants_ = plants;
    for (int r = 0; r < gpus_; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      fill_inputs<<<256, 256, 0, streams_[r]>>>(in(r), n_, seed, r);
      CUDA_CHECK_LAUNCH();
      if (!in_place_) {
        std::vector<std::uint32_t> poison(n_, kPoison);
        CUDA_CHECK(cudaMemcpyAsync(out(r), poison.data(), n_ * sizeof(float),
                                   cudaMemcpyHostToDevice, streams_[r]));
        CUDA_CHECK(cudaStreamSynchronize(streams_[r]));
      }
    }
    for (const Plant& p : plants) {
      CUDA_CHECK(cudaSetDevice(p.rank));
      CUDA_CHECK(cudaMemcpyAsync(in(p.rank) + p.i, &p.value, sizeof(float), cudaMemcpyHostToDevice,
                                 streams_[p.rank]));
      CUDA_CHECK(cudaStreamSynchronize(streams_[p.rank]));
    }
  }

  std::vector<AllreduceRank> ranks() const {
    std::vector<AllreduceRank> v(gpus_);
    for (int r = 0; r < gpus_; ++r) v[r] = {r, in(r), out(r), ws_[r].get(), streams_[r]};
    return v;
  }

  void call(A algorithm) {
    const std::vector<AllreduceRank> v = ranks();
    allreduce_sum(v.data(), gpus_, n_, algorithm);
  }
  void wait() { wait_or_die(streams_, devices_); }

  float input(int r, std::size_t i) const {
    float x = input_value(seed_, r, i);
    for (const Plant& p : plants_)
      if (p.rank == r && p.i == i) x = p.value;
    return x;
  }
  float expected(std::size_t i) const {
    float sum = input(0, i);
    for (int h = 1; h < gpus_; ++h) sum += input(h, i);
    return sum;
  }

  // "" when every output holds the rank-order sum (and, out of place, every
  // input is unchanged); else the first difference, with where and what.
  std::string verify() const {
    std::vector<float> got(n_);
    for (int r = 0; r < gpus_; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      CUDA_CHECK(cudaMemcpy(got.data(), out(r), n_ * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n_; ++i) {
        const float want = expected(i);
        const bool same = (std::isnan(want) && std::isnan(got[i])) ||
                          std::memcmp(&want, &got[i], sizeof want) == 0;
        if (!same) return describe("output", r, i, want, got[i]);
      }
      if (in_place_) continue;
      CUDA_CHECK(cudaMemcpy(got.data(), in(r), n_ * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < n_; ++i) {
        const float was = input(r, i);
        if (std::memcmp(&got[i], &was, sizeof was) != 0)
          return describe("input (an out-of-place call must not write it)", r, i, was, got[i]);
      }
    }
    return "";
  }

 private:
  std::string describe(const char* what, int r, std::size_t i, float want, float got) const {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &got, sizeof bits);
    char text[256];
    std::snprintf(text, sizeof text, "GPU %d's %s at %zu of %zu: expected %.9g, got %.9g%s", r,
                  what, i, n_, want, got, bits == kPoison ? " (the poison: never written)" : "");
    return text;
  }

  int gpus_;
  std::size_t n_;
  bool in_place_;
  std::size_t offset_;
  std::uint64_t seed_ = 0;
  std::vector<Plant> plants_;
  std::vector<lab::DeviceBuffer<float>> in_, out_;
  std::vector<lab::DeviceBuffer<unsigned char>> ws_;
  std::vector<cudaStream_t> streams_;
  std::vector<int> devices_;
};

std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    const char* s = std::getenv("LAB_SEED");
    const std::uint64_t v = s ? std::strtoull(s, nullptr, 0) : std::random_device{}();
    std::printf("lab 12 tests: seed %llu (LAB_SEED=%llu repeats this run)\n",
                static_cast<unsigned long long>(v), static_cast<unsigned long long>(v));
    return v;
  }();
  return seed;
}

// Fills, calls `times` times (refilling before each in-place call, whose
// input is gone), and checks after each call.
void run_and_check(Case& c, A algorithm, std::uint64_t seed, int gpus, bool in_place,
                   const std::vector<Plant>& plants = {}, int times = 2) {
  for (int k = 0; k < times; ++k) {
    if (k == 0 || in_place) c.fill(seed, plants);
    c.call(algorithm);
    c.wait();
    ASSERT_FALSE(todo_reached(gpus))
        << "not implemented: a kernel still runs its LAB_TODO(); write the fenced code";
    const std::string bad = c.verify();
    ASSERT_EQ(bad, "") << algorithm_name(algorithm) << (in_place ? ", in place" : ", out of place")
                       << ", call " << (k + 1) << " of " << times << ", seed " << seed;
  }
}

// ---- one GPU: the contract is a copy ----

TEST(AllreduceOneGpu, OutOfPlaceIsACopy) {
  NEED_GPUS(1);
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{3}, std::size_t{1000}, (std::size_t{1} << 20) + 1}) {
    Case c(1, n, false);
    run_and_check(c, A::kAuto, run_seed() + n, 1, false);
  }
}

TEST(AllreduceOneGpu, InPlaceLeavesTheInput) {
  NEED_GPUS(1);
  Case c(1, 4097, true);
  run_and_check(c, A::kAuto, run_seed(), 1, true);
}

TEST(AllreduceOneGpu, ZeroElementsWritesNothing) {
  NEED_GPUS(1);
  Case c(1, 0, false);
  c.call(A::kAuto);
  c.wait();
  EXPECT_EQ(c.verify(), "");
}

TEST(AllreduceOneGpu, RejectsBadGpuCounts) {
  NEED_GPUS(1);
  Case c(1, 8, false);
  const std::vector<AllreduceRank> v = c.ranks();
  EXPECT_THROW(allreduce_sum(v.data(), 0, 8), std::invalid_argument);
  EXPECT_THROW(allreduce_sum(v.data(), kAllreduceMaxGpus + 1, 8), std::invalid_argument);
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
    run_and_check(c, v.algorithm, run_seed() + n, machine().gpus, v.in_place);
    if (HasFatalFailure()) return;
  }
}

TEST_P(AllreduceVariants, RandomSizes) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  std::mt19937_64 pick(run_seed());
  for (int k = 0; k < 4; ++k) {
    const std::size_t n = 1 + pick() % (std::size_t{1} << 22);
    Case c(machine().gpus, n, v.in_place);
    run_and_check(c, v.algorithm, run_seed() + n, machine().gpus, v.in_place);
    if (HasFatalFailure()) return;
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
  std::vector<Plant> plants = {{0, 5, nan},      {g - 1, 6, nan},    {0, 7, inf},
                               {g - 1, 7, -inf}, {1, 8, inf},        {0, 9, -inf},
                               {1, 9, -inf},     {g - 1, 4098, inf}, {0, 4097, nan}};
  Case c(g, n, v.in_place);
  run_and_check(c, v.algorithm, run_seed(), g, v.in_place, plants);
}

// Buffers one float past a 16-byte boundary: no float4 may be used on them.
TEST_P(AllreduceVariants, UnalignedBuffers) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  for (const std::size_t n : {std::size_t{1}, std::size_t{1001}, (std::size_t{1} << 18) + 1}) {
    Case c(machine().gpus, n, v.in_place, 1);
    run_and_check(c, v.algorithm, run_seed() + n, machine().gpus, v.in_place);
    if (HasFatalFailure()) return;
  }
}

// Many calls on one workspace: the flags count on from where the last call
// left them, and the answer never changes.
TEST_P(AllreduceVariants, RepeatedCalls) {
  NEED_GPUS(2);
  const Variant v = GetParam();
  Case c(machine().gpus, (std::size_t{1} << 16) + 1, v.in_place);
  run_and_check(c, v.algorithm, run_seed(), machine().gpus, v.in_place, {}, 20);
}

INSTANTIATE_TEST_SUITE_P(Lab12, AllreduceVariants,
                         ::testing::Values(Variant{A::kAuto, false}, Variant{A::kAuto, true},
                                           Variant{A::kOneShot, false}, Variant{A::kOneShot, true},
                                           Variant{A::kTwoShot, false}, Variant{A::kTwoShot, true}),
                         variant_name);

// Two all-reduces in flight at once, each on its own streams and workspaces,
// queued alternately: neither may wait for or write into the other.
TEST(AllreduceTwoStreams, IndependentCallsInFlight) {
  NEED_GPUS(2);
  const int g = machine().gpus;
  for (const A algorithm : {A::kOneShot, A::kTwoShot}) {
    Case a(g, (std::size_t{1} << 20) + 1, false), b(g, 300001, true);
    for (int k = 0; k < 3; ++k) {
      a.fill(run_seed() + 1);
      b.fill(run_seed() + 2);
      a.call(algorithm);
      b.call(algorithm);
      a.call(algorithm);  // again, on its own workspace, while b may still run
      a.wait();
      b.wait();
      ASSERT_FALSE(todo_reached(g)) << "not implemented: a kernel still runs its LAB_TODO()";
      EXPECT_EQ(a.verify(), "") << algorithm_name(algorithm) << " (out of place)";
      EXPECT_EQ(b.verify(), "") << algorithm_name(algorithm) << " (in place)";
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
        run_and_check(c, algorithm, run_seed() + g, g, in_place);
        if (HasFatalFailure()) return;
      }
}

}  // namespace

// --require-gpus=N: exit 77 (skip) below N usable GPUs. The mutants' tests pass
// it: a mistake only two GPUs can show must not pass on one.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int require = 1;
  for (int i = 1; i < argc; ++i)
    if (const char* v = lab::flag_value(argv[i], "--require-gpus=")) require = std::atoi(v);
  std::string why;
  if (!lab::cuda_device_available(&why)) {
    std::printf("SKIP lab 12 tests: %s\n", why.c_str());
    return 77;  // meson reports SKIP
  }
  if (machine().gpus < require) {
    std::printf("SKIP lab 12 tests: %d GPUs needed; %s\n", require, machine().why.c_str());
    return 77;
  }
  run_seed();
  if (machine().gpus < 2)
    std::printf("lab 12 tests: %s; the multi-GPU tests skip\n", machine().why.c_str());
  return RUN_ALL_TESTS();
}
