// Lab 12's benchmark: the reference all-reduce beside its limit, a kernel that
// only copies the same bytes between the GPUs ("k-copy"), and beside NCCL's
// ncclAllReduce and the copy engines' cudaMemcpyPeerAsync, over the GPUs of
// this process, one stream each, from 2^16 to 2^30 floats per GPU.
//
// Every method is timed the same way: CUDA events on GPU 0's stream around a
// batch of calls, the other streams forked from and joined back into it, so a
// batch ends when the slowest GPU is done; common/bench.hpp's routine (warm-up,
// batches of at least 5 ms, median of 9) in 3 rounds taken in turn, the least
// median kept. Figures as nccl-tests reports them: algbw = bytes of one GPU's
// buffer / time, busbw = algbw * 2(G-1)/G (what each GPU's link carries, for
// comparison across GPU counts). Inputs are not rotated as the one-GPU labs'
// are: the links, not a GPU's memory, set the time (as in nccl-tests).
//
// The ceilings: "copy_all", every GPU pulling n floats from the next at once
// (for two GPUs the least traffic any all-reduce needs: each GPU must receive
// the other's n floats), and "copy_one", one GPU pulling from one peer with the
// others idle (the issue's probe measured this one). Both are the copy
// engines'. The lab moves its data with kernels (labs.toml forbids
// cudaMemcpyPeer), so two more ceilings are kernels: "copy_all_stores", every
// GPU's kernel storing its n floats into the next GPU's buffer, and
// "copy_all_loads", every GPU's kernel loading the next GPU's n floats into its
// own, 16 bytes a thread, eight in flight. For two GPUs no all-reduce made of
// such loads or stores can beat the better of them: it moves the same bytes
// over the link, and adds.
//
// Before any timing, each size's reference calls (auto, one-shot, two-shot,
// in place and out of place) are checked element by element against a host
// sum in rank order: outputs poisoned first, inputs random and never zero
// (seed printed; --seed to repeat). Equal bits are required, since the contract
// fixes the order of the additions. NCCL's result is checked too, with a
// tolerance (its order is its own); a wrong NCCL is reported, not fatal.
//
// usage: bench-12_multi_gpu_allreduce [--sizes=LOG2,...] [--gpus=G] [--seed=S] [--json=FILE]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "allreduce_contract.cuh"
#include "allreduce_inputs.cuh"
#include "bench.hpp"
#include "cuda_check.cuh"
#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "device_info.hpp"
#include "event_timer.cuh"
#include "json.hpp"

#if LAB_HAVE_NCCL
#include <nccl.h>
#endif

namespace {

constexpr int kRounds = 3;

using lab::allreduce::fill_inputs;
using lab::allreduce::input_value;

#if LAB_HAVE_NCCL
void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw std::runtime_error(std::string(what) + " failed: " + ncclGetErrorString(r));
}
#endif

struct Gpu {
  int device = 0;
  std::unique_ptr<lab::CudaStream> stream;
  cudaEvent_t join = nullptr;  // marks the end of a batch on this GPU's stream
  lab::DeviceBuffer<float> in, out;
  lab::DeviceBuffer<unsigned char> workspace;
};

struct Figure {
  double ms = 1e30;  // least median of the rounds, per call
  double algbw(std::size_t bytes) const { return ms < 1e29 ? bytes / (ms * 1e6) : 0.0; }
};

struct Row {
  int log2n = 0;
  std::size_t n = 0;
  std::string status = "ok";  // ok | wrong | no_memory
  std::string detail;
  std::string nccl_check = "not_run";
  std::vector<std::pair<std::string, Figure>> figures;
};

class Rig {
 public:
  explicit Rig(int gpus) : gpus_(gpus) {
    for (int r = 0; r < gpus; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      Gpu g;
      g.device = r;
      g.stream = std::make_unique<lab::CudaStream>();
      CUDA_CHECK(cudaEventCreateWithFlags(&g.join, cudaEventDisableTiming));
      gpu_.push_back(std::move(g));
    }
    CUDA_CHECK(cudaSetDevice(0));
    timer_ = std::make_unique<lab::EventTimer>();
    CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
#if LAB_HAVE_NCCL
    comms_.resize(gpus);
    std::vector<int> devices(gpus);
    for (int r = 0; r < gpus; ++r) devices[r] = r;
    // A run without NCCL's figures still has the reference's and the ceilings:
    // a failed init is reported, not fatal.
    const ncclResult_t init = ncclCommInitAll(comms_.data(), gpus, devices.data());
    if (init != ncclSuccess) {
      nccl_error_ = std::string("ncclCommInitAll failed: ") + ncclGetErrorString(init);
      comms_.clear();
    }
#else
    nccl_error_ = "not built in (meson found no NCCL)";
#endif
  }
  ~Rig() {
#if LAB_HAVE_NCCL
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
#endif
    for (Gpu& g : gpu_) cudaEventDestroy(g.join);
    cudaEventDestroy(fork_);
  }
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;

  int gpus() const { return gpus_; }
  bool has_nccl() const { return nccl_error_.empty(); }
  const std::string& nccl_error() const { return nccl_error_; }
  Gpu& gpu(int r) { return gpu_[r]; }
  cudaStream_t stream(int r) const { return *gpu_[r].stream; }

  std::vector<AllreduceRank> ranks(bool in_place) {
    std::vector<AllreduceRank> v(gpus_);
    for (int r = 0; r < gpus_; ++r) {
      Gpu& g = gpu_[r];
      v[r] = {g.device, g.in.get(), in_place ? g.in.get() : g.out.get(), g.workspace.get(),
              *g.stream};
    }
    return v;
  }

#if LAB_HAVE_NCCL
  void nccl_allreduce(std::size_t n, bool in_place) {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < gpus_; ++r) {
      Gpu& g = gpu_[r];
      nccl_check(ncclAllReduce(g.in.get(), in_place ? g.in.get() : g.out.get(), n, ncclFloat,
                               ncclSum, comms_[r], *g.stream),
                 "ncclAllReduce");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }
#endif

  // Milliseconds from GPU 0's start event, which every stream waits for, to
  // its stop event, which waits for every stream.
  double time_batch(const std::function<void(long)>& call, long first, int count) {
    CUDA_CHECK(cudaSetDevice(0));
    timer_->start(stream(0));
    CUDA_CHECK(cudaEventRecord(fork_, stream(0)));
    for (int r = 1; r < gpus_; ++r) CUDA_CHECK(cudaStreamWaitEvent(stream(r), fork_, 0));
    for (int k = 0; k < count; ++k) call(first + k);
    for (int r = 1; r < gpus_; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      CUDA_CHECK(cudaEventRecord(gpu_[r].join, stream(r)));
      CUDA_CHECK(cudaSetDevice(0));
      CUDA_CHECK(cudaStreamWaitEvent(stream(0), gpu_[r].join, 0));
    }
    CUDA_CHECK(cudaSetDevice(0));
    return timer_->stop_ms();
  }

  // Waits for every stream; a GPU still busy after 30 s is a barrier nobody
  // reaches, reported as such (no figure of this run could be trusted, and a
  // spinning GPU cannot be stopped from here).
  void synchronize() {
    const lab::WallTimer clock;
    for (int r = 0; r < gpus_; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      for (;;) {
        const cudaError_t e = cudaStreamQuery(stream(r));
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) CUDA_CHECK(e);
        if (clock.ms() > 30e3) {
          std::fprintf(stderr,
                       "bench-12_multi_gpu_allreduce: hang: GPU %d has not finished after 30 s "
                       "(its blocks wait for a flag that never comes)\n",
                       r);
          std::fflush(stderr);
          std::_Exit(1);
        }
      }
    }
  }

 private:
  int gpus_;
  std::vector<Gpu> gpu_;
  std::unique_ptr<lab::EventTimer> timer_;
  cudaEvent_t fork_ = nullptr;
  std::string nccl_error_;
#if LAB_HAVE_NCCL
  std::vector<ncclComm_t> comms_;
#endif
};

void fill_all(Rig& rig, std::size_t n, std::uint64_t seed) {
  for (int r = 0; r < rig.gpus(); ++r) {
    CUDA_CHECK(cudaSetDevice(r));
    fill_inputs<<<1024, 256, 0, rig.stream(r)>>>(rig.gpu(r).in.get(), n, seed, r);
    CUDA_CHECK_LAUNCH();
  }
}

void poison(Rig& rig, bool in_place) {
  if (in_place) return;  // the output is the input
  for (int r = 0; r < rig.gpus(); ++r) {
    CUDA_CHECK(cudaSetDevice(r));
    rig.gpu(r).out.fill_bytes(0xFF, rig.stream(r));  // a NaN no sum of these inputs gives
  }
}

// "" when every GPU's output is the host's rank-order sum (exact), or within
// `tolerance` of it relative to the sum of magnitudes; else what differs first.
std::string check_outputs(Rig& rig, std::size_t n, std::uint64_t seed, bool in_place,
                          double tolerance) {
  rig.synchronize();
  const int gpus = rig.gpus();
  static std::unique_ptr<float[]> got;  // left uninitialised: gigabytes at the largest sizes
  static std::size_t got_size = 0;
  if (got_size < n) {
    got.reset(new float[n]);
    got_size = n;
  }
  const unsigned threads = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  for (int r = 0; r < gpus; ++r) {
    CUDA_CHECK(cudaSetDevice(r));
    const float* src = in_place ? rig.gpu(r).in.get() : rig.gpu(r).out.get();
    CUDA_CHECK(cudaMemcpy(got.get(), src, n * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<std::size_t> first_bad(threads, n);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const std::size_t begin = n * t / threads, end = n * (t + 1) / threads;
        for (std::size_t i = begin; i < end; ++i) {
          float sum = input_value(seed, 0, i);
          double magnitude = std::fabs(sum);
          for (int h = 1; h < gpus; ++h) {
            const float x = input_value(seed, h, i);
            sum += x;
            magnitude += std::fabs(x);
          }
          const bool ok = tolerance == 0.0
                              ? std::memcmp(&sum, &got[i], sizeof sum) == 0
                              : std::fabs(double(got[i]) - sum) <= tolerance * magnitude;
          if (!ok) {
            first_bad[t] = i;
            return;
          }
        }
      });
    for (auto& th : pool) th.join();
    const std::size_t bad = *std::min_element(first_bad.begin(), first_bad.end());
    if (bad < n) {
      float sum = input_value(seed, 0, bad);
      for (int h = 1; h < gpus; ++h) sum += input_value(seed, h, bad);
      char text[160];
      std::snprintf(text, sizeof text, "GPU %d element %zu of %zu: expected %.9g, got %.9g", r, bad,
                    n, sum, got[bad]);
      return text;
    }
  }
  return "";
}

// n/4 float4 units from src to dst, one of them on a peer: the kernel copies
// the ceilings copy_all_stores and copy_all_loads time.
__global__ void __launch_bounds__(512)
    peer_copy(float4* dst, const float4* src, std::size_t units) {
  constexpr int kInFlight = 8;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < units; i += kInFlight * stride) {
    float4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < units; i += stride) dst[i] = src[i];
}

// Every GPU r at once: a kernel on r copies GPU (r+1)'s input into r's output
// (loads over the link) or r's input into GPU (r+1)'s output (stores).
void kernel_copy_all(Rig& rig, std::size_t n, bool stores) {
  const int gpus = rig.gpus();
  for (int r = 0; r < gpus; ++r) {
    const int next = (r + 1) % gpus;
    int sms = 0;
    CUDA_CHECK(cudaSetDevice(r));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, r));
    float* dst = stores ? rig.gpu(next).out.get() : rig.gpu(r).out.get();
    const float* src = stores ? rig.gpu(r).in.get() : rig.gpu(next).in.get();
    peer_copy<<<2 * sms, 512, 0, rig.stream(r)>>>(reinterpret_cast<float4*>(dst),
                                                  reinterpret_cast<const float4*>(src), n / 4);
    CUDA_CHECK_LAUNCH();
  }
}

Row bench_size(Rig& rig, int log2n, std::uint64_t seed) {
  Row row;
  row.log2n = log2n;
  row.n = std::size_t{1} << log2n;
  const std::size_t n = row.n, bytes = n * sizeof(float);
  const int gpus = rig.gpus();
  const std::size_t ws_bytes = allreduce_workspace_bytes(n, gpus);
  for (int r = 0; r < gpus; ++r) {  // the last size's buffers go before this one's come
    CUDA_CHECK(cudaSetDevice(r));
    Gpu& g = rig.gpu(r);
    g.in = {};
    g.out = {};
    g.workspace = {};
  }
  for (int r = 0; r < gpus; ++r) {
    CUDA_CHECK(cudaSetDevice(r));
    std::size_t free_bytes = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    if (2 * bytes + ws_bytes + (std::size_t{1} << 30) > free_bytes) {
      row.status = "no_memory";
      return row;
    }
    Gpu& g = rig.gpu(r);
    g.in = lab::DeviceBuffer<float>(n);
    g.out = lab::DeviceBuffer<float>(n);
    g.workspace = lab::DeviceBuffer<unsigned char>(ws_bytes);
    g.workspace.fill_bytes(0, rig.stream(r));  // the contract's rule: zeroed once, then kept
  }
  // Zeroed before the first call anywhere: a peer may write into a workspace
  // (its flags, two-shot's inbox) before this GPU's stream reaches the call.
  rig.synchronize();
  const std::vector<AllreduceRank> oop = rig.ranks(false), inp = rig.ranks(true);
  using A = AllreduceAlgorithm;
  struct Case {
    const char* name;
    A algorithm;
    bool in_place;
  };
  const Case cases[] = {{"ref", A::kAuto, false},
                        {"ref_in_place", A::kAuto, true},
                        {"ref_one_shot", A::kOneShot, false},
                        {"ref_two_shot", A::kTwoShot, false},
                        {"ref_one_shot_in_place", A::kOneShot, true},
                        {"ref_two_shot_in_place", A::kTwoShot, true}};
  // Twice each up to 2^26 floats: the second call finds the workspace as the
  // first left it. Larger sizes once, to keep the host's share of the run short.
  const int reps = log2n <= 26 ? 2 : 1;
  for (const Case& c : cases) {
    for (int rep = 0; rep < reps && row.status == "ok"; ++rep) {
      fill_all(rig, n, seed + log2n);
      poison(rig, c.in_place);
      allreduce_sum((c.in_place ? inp : oop).data(), gpus, n, c.algorithm);
      const std::string bad = check_outputs(rig, n, seed + log2n, c.in_place, 0.0);
      if (!bad.empty()) {
        row.status = "wrong";
        row.detail = std::string(c.name) + " (call " + std::to_string(rep + 1) + "): " + bad;
      }
    }
  }
  if (row.status != "ok") return row;
#if LAB_HAVE_NCCL
  if (rig.has_nccl()) {
    fill_all(rig, n, seed + log2n);
    poison(rig, false);
    rig.nccl_allreduce(n, false);
    const std::string nccl_bad = check_outputs(rig, n, seed + log2n, false, 1e-6);
    row.nccl_check = nccl_bad.empty() ? "ok" : "wrong: " + nccl_bad;
  }
#endif
  fill_all(rig, n, seed + log2n);
  rig.synchronize();

  std::vector<std::pair<std::string, std::function<void(long)>>> methods;
  for (const Case& c : cases) {
    const AllreduceRank* ranks = (c.in_place ? inp : oop).data();
    const A algorithm = c.algorithm;
    methods.emplace_back(c.name, [=](long) { allreduce_sum(ranks, gpus, n, algorithm); });
  }
#if LAB_HAVE_NCCL
  if (rig.has_nccl()) {
    methods.emplace_back("nccl", [&](long) { rig.nccl_allreduce(n, false); });
    methods.emplace_back("nccl_in_place", [&](long) { rig.nccl_allreduce(n, true); });
  }
#endif
  methods.emplace_back("copy_all", [&](long) {
    for (int r = 0; r < gpus; ++r) {
      const int from = (r + 1) % gpus;
      CUDA_CHECK(cudaSetDevice(r));
      CUDA_CHECK(cudaMemcpyPeerAsync(rig.gpu(r).out.get(), r, rig.gpu(from).in.get(), from, bytes,
                                     rig.stream(r)));
    }
  });
  if (n % 4 == 0) {  // every size the bench takes (2^LOG2 floats, LOG2 >= 2)
    methods.emplace_back("copy_all_stores", [&](long) { kernel_copy_all(rig, n, true); });
    methods.emplace_back("copy_all_loads", [&](long) { kernel_copy_all(rig, n, false); });
  }
  methods.emplace_back("copy_one", [&](long) {
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(
        cudaMemcpyPeerAsync(rig.gpu(0).out.get(), 0, rig.gpu(1).in.get(), 1, bytes, rig.stream(0)));
  });
  for (const auto& m : methods) row.figures.emplace_back(m.first, Figure{});
  for (int round = 0; round < kRounds; ++round)
    for (std::size_t k = 0; k < methods.size(); ++k) {
      const auto& call = methods[k].second;
      const lab::BenchResult r = lab::bench_calls(
          [&](long first, int count) { return rig.time_batch(call, first, count); }, bytes);
      row.figures[k].second.ms = std::min(row.figures[k].second.ms, r.median_ms);
    }
  return row;
}

double figure_of(const Row& row, const std::string& name) {
  for (const auto& f : row.figures)
    if (f.first == name) return f.second.algbw(row.n * sizeof(float));
  return 0.0;
}

// The lab's limit: the faster of the two kernel-made copies (no all-reduce made
// of a kernel's loads or stores moves its bytes over the link faster).
double kernel_copy(const Row& r) {
  return std::max(figure_of(r, "copy_all_stores"), figure_of(r, "copy_all_loads"));
}

std::string row_json(const Row& r, int gpus) {
  const std::size_t bytes = r.n * sizeof(float);
  const double bus = 2.0 * (gpus - 1) / gpus;
  std::string j = "{\"log2n\":" + std::to_string(r.log2n) + ",\"n\":" + std::to_string(r.n) +
                  ",\"bytes\":" + std::to_string(bytes) +
                  ",\"status\":" + lab::json_string(r.status) +
                  ",\"detail\":" + lab::json_string(r.detail) +
                  ",\"nccl_check\":" + lab::json_string(r.nccl_check) + ",\"methods\":{";
  for (std::size_t k = 0; k < r.figures.size(); ++k) {
    const Figure& f = r.figures[k].second;
    const bool copy = r.figures[k].first.rfind("copy", 0) == 0;
    j += std::string(k ? "," : "") + lab::json_string(r.figures[k].first) +
         ":{\"median_ms\":" + std::to_string(f.ms) +
         ",\"algbw_gbps\":" + std::to_string(f.algbw(bytes)) +
         (copy ? "" : ",\"busbw_gbps\":" + std::to_string(f.algbw(bytes) * bus)) + "}";
  }
  const double nccl = figure_of(r, "nccl"), copy_one = figure_of(r, "copy_one"),
               copy_all = figure_of(r, "copy_all"), ref = figure_of(r, "ref"),
               stores = figure_of(r, "copy_all_stores");
  j += "},\"ref_over_nccl\":" + std::to_string(nccl > 0 ? ref / nccl : 0.0) +
       ",\"ref_over_copy_one\":" + std::to_string(copy_one > 0 ? ref / copy_one : 0.0) +
       ",\"ref_over_copy_all\":" + std::to_string(copy_all > 0 ? ref / copy_all : 0.0) +
       ",\"ref_over_copy_all_stores\":" + std::to_string(stores > 0 ? ref / stores : 0.0) +
       ",\"ref_over_kernel_copy\":" +
       std::to_string(kernel_copy(r) > 0 ? ref / kernel_copy(r) : 0.0) + "}";
  return j;
}

std::vector<int> parse_sizes(const char* v) {
  std::vector<int> sizes;
  for (const char* p = v; *p;) {
    char* end = nullptr;
    sizes.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    if (end == p) break;
    p = end;
    if (*p == ',') ++p;
  }
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  // NVLink multicast (NVLS) can put a shared host's GPUs out of service:
  // NCCL must never try it, whatever the caller's environment says.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  std::vector<int> sizes;
  for (int s = 16; s <= 30; ++s) sizes.push_back(s);
  const char* json_path = nullptr;
  int want_gpus = 0;
  std::uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    if (const char* v = lab::flag_value(argv[i], "--sizes=")) {
      sizes = parse_sizes(v);
    } else if (const char* v = lab::flag_value(argv[i], "--gpus=")) {
      want_gpus = std::atoi(v);
    } else if (const char* v = lab::flag_value(argv[i], "--seed=")) {
      seed = std::strtoull(v, nullptr, 0);
    } else if (const char* v = lab::flag_value(argv[i], "--json=")) {
      json_path = v;
    } else {
      std::fprintf(stderr, "usage: %s [--sizes=LOG2,...] [--gpus=G] [--seed=S] [--json=FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  for (const int s : sizes)
    if (s < 0 || s > 32) {
      std::fprintf(stderr, "--sizes: log2 sizes from 0 to 32\n");
      return 2;
    }
  try {
    std::string why;
    int count = 0;
    if (!lab::cuda_device_available(&why) || cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    if (count < 2) {
      std::fprintf(stderr,
                   "bench-12_multi_gpu_allreduce: an all-reduce across GPUs needs at least 2 GPUs; "
                   "this machine has %d%s%s\n",
                   count, why.empty() ? "" : ": ", why.c_str());
      return 1;
    }
    const int gpus =
        want_gpus > 0 ? std::min(want_gpus, count) : std::min(count, kAllreduceMaxGpus);
    if (gpus < 2 || gpus > kAllreduceMaxGpus) {
      std::fprintf(stderr, "--gpus: 2 to %d\n", kAllreduceMaxGpus);
      return 2;
    }
    for (int a = 0; a < gpus; ++a)
      for (int b = 0; b < gpus; ++b) {
        if (a == b) continue;
        int can = 0;
        CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
        if (!can) {
          std::fprintf(stderr,
                       "bench-12_multi_gpu_allreduce: GPU %d cannot access GPU %d's memory (no "
                       "P2P between them): the reference reads and writes peer memory\n",
                       a, b);
          return 1;
        }
        CUDA_CHECK(cudaSetDevice(a));
        const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
        else CUDA_CHECK(e);
      }
    std::vector<lab::DeviceInfo> info;
    for (int r = 0; r < gpus; ++r) info.push_back(lab::query_device(r));
    int nccl_version = 0;
#if LAB_HAVE_NCCL
    ncclGetVersion(&nccl_version);
#endif
    std::printf("lab 12 all-reduce on %d x %s, seed %llu, NCCL %d%s\n", gpus, info[0].name.c_str(),
                static_cast<unsigned long long>(seed), nccl_version,
                LAB_HAVE_NCCL ? "" : " (not built in)");
    Rig rig(gpus);
    if (!rig.has_nccl())
      std::printf("NCCL: %s; its columns stay empty\n", rig.nccl_error().c_str());
    std::vector<Row> rows;
    // The limit first: the kernel-made copy; then NCCL; then the copy engines'.
    std::printf("  %-6s %-6s %10s %10s %7s %10s %7s %10s %10s %10s %10s %10s  %s\n", "size",
                "status", "ref", "k-copy", "ref/kc", "NCCL", "ref/NC", "one-shot", "two-shot",
                "k-stores", "k-loads", "copy_all", "(algbw GB/s)");
    for (const int s : sizes) {
      rows.push_back(bench_size(rig, s, seed));
      const Row& r = rows.back();
      const double nccl = figure_of(r, "nccl");
      const double kc = kernel_copy(r), ref = figure_of(r, "ref");
      std::printf("  2^%-4d %-6s %10.1f %10.1f %7.3f %10.1f %7.3f %10.1f %10.1f %10.1f %10.1f "
                  "%10.1f  %s%s\n",
                  r.log2n, r.status.c_str(), ref, kc, kc > 0 ? ref / kc : 0.0, nccl,
                  nccl > 0 ? ref / nccl : 0.0, figure_of(r, "ref_one_shot"),
                  figure_of(r, "ref_two_shot"), figure_of(r, "copy_all_stores"),
                  figure_of(r, "copy_all_loads"), figure_of(r, "copy_all"), r.detail.c_str(),
                  r.nccl_check == "ok" || r.nccl_check == "not_run"
                      ? ""
                      : (" NCCL " + r.nccl_check).c_str());
      std::fflush(stdout);
    }
    const char* commit = std::getenv("LAB_GIT_COMMIT");
    const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
    std::string json = "{\"name\":\"12_multi_gpu_allreduce\",\"contract\":\"float sum all-reduce\""
                       ",\"gpus\":" +
                       std::to_string(gpus) + ",\"device\":" + lab::json_string(info[0].name) +
                       ",\"devices\":[";
    for (int r = 0; r < gpus; ++r)
      json += std::string(r ? "," : "") + lab::json_string(info[r].name);
    json += "],\"driver\":" + std::to_string(info[0].driver_version) +
            ",\"runtime\":" + std::to_string(info[0].runtime_version) +
            ",\"nccl_version\":" + std::to_string(nccl_version) +
            ",\"nccl_error\":" + lab::json_string(rig.nccl_error()) +
            ",\"nccl_nvls_enable\":" + lab::json_string(nvls ? nvls : "") +
            ",\"commit\":" + lab::json_string(commit ? commit : "") +
            ",\"seed\":" + std::to_string(seed) + ",\"rounds\":" + std::to_string(kRounds) +
            ",\"notes\":" +
            lab::json_string(
                "algbw = bytes of one GPU's buffer / time; busbw = algbw * 2(G-1)/G; "
                "ref = auto out of place; ref_one_shot_in_place runs two-shot above "
                "the reference's in-place stage (2^20 floats); copy_all = every GPU "
                "pulls n floats from the next at once, copy_one = GPU 0 from GPU 1 (both by the "
                "copy engines); copy_all_stores / copy_all_loads = copy_all made by a "
                "kernel on every GPU, storing into the next GPU's buffer / loading "
                "from it") +
            ",\"sizes\":[";
    for (std::size_t i = 0; i < rows.size(); ++i)
      json += std::string(i ? "," : "") + row_json(rows[i], gpus);
    json += "]}\n";
    if (json_path && !lab::write_report(json_path, json)) return 1;
    for (const Row& r : rows)
      if (r.status == "wrong") return 1;
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench-12_multi_gpu_allreduce: %s\n", e.what());
    return 1;
  }
}
