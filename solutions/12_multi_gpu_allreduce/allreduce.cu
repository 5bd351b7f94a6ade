// Lab 12: a float sum all-reduce across the GPUs of one process. The handout
// is README.md; the contract is common/allreduce_contract.cuh.
//
// One kernel per GPU per call, on the caller's stream, and no host round trip:
// the GPUs wait for each other through flags in each other's workspace.
//
//   one-shot  every GPU reads every peer's whole buffer over NVLink and adds:
//             one step, so the least latency, but each GPU receives (G-1)·n
//             floats. With two GPUs that is n, which two-shot needs as well.
//   two-shot  GPU r owns elements [r·n/G, (r+1)·n/G). Every GPU first stores
//             each peer's share of its input into that peer's inbox (in the
//             peer's workspace), then sums its own share from its input and
//             its inbox and stores the sum into every GPU's output: a
//             reduce-scatter, then an all-gather, both by remote stores. Each
//             GPU receives 2·(G-1)/G·n floats, a quarter of one-shot's at 8.
//             Why stores: NVLink carries a store's data one way, while a load
//             sends a request and waits for the data to come back, and with
//             both directions full the requests take room from the data.
//   ring      (not here) NCCL's choice across many GPUs or nodes: each GPU
//             talks to one neighbour only, so it needs only one link's worth of
//             bandwidth per GPU; over NVSwitch, where every pair has a full
//             link, two-shot moves the same bytes in 2 steps instead of 2·(G-1).
//
// The flags. Block b of every GPU handles the same elements on every GPU, so
// block b needs to meet only the blocks b of its peers, never a whole GPU:
// it stores a value into slot [b][me] of each peer's flag table and waits
// until its own slots [b][peer] hold that value. Twice per call:
//   start  a peer's block b running means the peer's stream reached this
//          call, so its input is ready to be read and its output may be
//          written. Two-shot meets for the first time once it has pushed its
//          inputs (below), which also says that this GPU's inbox is full;
//   end    every peer is done reading this GPU's buffers (which the caller may
//          overwrite as soon as this GPU's kernel ends) and done writing into
//          its outputs (two-shot).
// The values count up from the zeroed workspace (the contract's workspace
// rule): block b keeps the number of barriers it has passed in its counter,
// so no call has to reset anything. A peer can be one barrier ahead (it passed
// the end barrier and already signalled the next call's start), never two, so
// a waiter accepts any value at or past the one it waits for.
//
// Memory order across GPUs. The stores of a block (what it pushed into a
// peer's inbox or output) must be visible to the peer before the flag that says they
// are done. __syncthreads() orders every thread's stores before the flag
// store, and the flag store is a release at system scope (every GPU and the
// host), which makes them visible to whoever acquires the flag at that scope:
// the waiter's load is an acquire, and its own __syncthreads() hands that on to
// the rest of its block. A plain (volatile) flag store would do nothing of the
// sort: the data could arrive after the flag. __threadfence_system() before a
// relaxed store is the older spelling of the same release.
//
// In place, one-shot would race: a GPU that has written its sums into its
// buffer (which is its input) while a slower peer still reads that buffer
// gives the peer sums instead of inputs. So each GPU first copies its input
// into its workspace, and the peers read that copy. Two-shot needs no copy: a
// GPU's input is read by that GPU alone, and a peer stores sums into it only
// after its block b has met this GPU's block b, which has pushed them by then.
//
// Only the fenced regions are yours; the grader restores everything else.
#include <cuda/atomic>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "allreduce_contract.cuh"
#include "lab_fence.cuh"

namespace lab12 {

constexpr unsigned kThreads = 512;
// Every block must be resident at once: block b spins until block b of each
// peer arrives, and a block that waits for a free SM behind spinning blocks
// would never come. One block of 512 threads per SM leaves room for three more
// (an H100 holds 2048 threads per SM), so two or three calls on other streams
// can be in flight together.
constexpr unsigned kBlocksPerSm = 1;
constexpr unsigned kMaxBlocks = 1024;
// A one-shot call in place first copies its input into the workspace (the
// stage), up to this many floats; above it, such a call runs as two-shot, which
// needs no copy, rather than double the workspace of a large call.
constexpr std::size_t kOneShotMaxFloats = std::size_t{1} << 20;
// kAuto. With two GPUs both algorithms receive n floats per GPU, one-shot by
// remote loads, two-shot by remote stores, and two-shot was the faster at every
// size measured on two H200s. Beyond two GPUs one-shot receives G/2 times
// two-shot's bytes ((G-1)·n against 2·(G-1)/G·n): only the smallest sizes,
// where latency and not bytes sets the time, may go one-shot (not measured:
// no machine here has more than two GPUs).
constexpr std::size_t kOneShotMaxBytesManyGpus = std::size_t{1} << 19;

// The workspace: flag table, per-block counters, then one area that is the
// copy of the input (one-shot in place) or the inbox (two-shot): G-1 slots of
// one share each, where the peers push this GPU's share of their inputs. One
// call at a time uses a workspace, so the two may overlap.
struct Layout {
  static constexpr std::size_t kFlagWords = std::size_t{kMaxBlocks} * kAllreduceMaxGpus;
  static constexpr std::size_t kHeaderBytes =
      ((kFlagWords + kMaxBlocks) * sizeof(unsigned) + 255) / 256 * 256;
  static unsigned* flags(void* ws) { return static_cast<unsigned*>(ws); }
  static unsigned* counters(void* ws) { return static_cast<unsigned*>(ws) + kFlagWords; }
  static float* stage(void* ws) {
    return reinterpret_cast<float*>(static_cast<unsigned char*>(ws) + kHeaderBytes);
  }
  static float* inbox(void* ws) { return stage(ws); }
  // Floats of one inbox slot: at least the largest share, ceil(n / G) floats or
  // ceil(n / 4 / G) float4 units, and a multiple of 4 so that slots stay 16-byte
  // aligned.
  static std::size_t slot_floats(std::size_t n, int gpus) {
    const auto g = static_cast<std::size_t>(gpus);
    return ((n + g - 1) / g / 4 + 1) * 4;
  }
};

struct Args {
  const float* src[kAllreduceMaxGpus];  // what the peers read: their input or its copy
  float* out[kAllreduceMaxGpus];
  unsigned* flags[kAllreduceMaxGpus];
  float* inbox[kAllreduceMaxGpus];  // each rank's inbox (two-shot)
  std::size_t slot;                 // floats per inbox slot
  const float* in;                  // this rank's input
  float* stage;                     // this rank's copy of it, when it must make one (else nullptr)
  unsigned* counters;               // this rank's per-block barrier counters
  std::size_t n;
  int rank;
};

// Where rank `from` pushes its part of rank `to`'s share: slots skip `to` itself.
__device__ inline float* inbox_slot(const Args& a, int from, int to) {
  return a.inbox[to] + static_cast<std::size_t>(from < to ? from : from - 1) * a.slot;
}

template <class Vec>
struct Lanes;
template <>
struct Lanes<float> {
  static constexpr int kWidth = 1;
  __device__ static float add(float a, float b) { return a + b; }
};
template <>
struct Lanes<float4> {
  static constexpr int kWidth = 4;
  __device__ static float4 add(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
};

// Block b meets block b of every peer (see the top of the file).
template <int G>
__device__ void meet_peers(const Args& a, unsigned value) {
  // ---- your code here (meet_peers) ----
  __syncthreads();  // every thread's loads and stores come before the release
  const unsigned t = threadIdx.x;
  if (t < G && static_cast<int>(t) != a.rank) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_system> theirs(
        a.flags[t][blockIdx.x * kAllreduceMaxGpus + a.rank]);
    theirs.store(value, cuda::memory_order_release);
    cuda::atomic_ref<unsigned, cuda::thread_scope_system> mine(
        a.flags[a.rank][blockIdx.x * kAllreduceMaxGpus + t]);
    // At or past `value`, counted so that the counters may wrap.
    while (static_cast<int>(mine.load(cuda::memory_order_acquire) - value) < 0) {
    }
  }
  __syncthreads();
  // ---- end ----
}

// Loads in flight per thread, whatever G: each step reads G vectors per unit.
template <int G>
inline constexpr int kUnroll = G >= 8 ? 1 : 8 / G;

// Sums element i (a float or a float4) over the G sources, in rank order.
template <int G, class Vec>
__device__ Vec sum_at(const Args& a, std::size_t i) {
  Vec x[G];
#pragma unroll
  for (int h = 0; h < G; ++h) x[h] = reinterpret_cast<const Vec*>(a.src[h])[i];
  Vec acc = x[0];
#pragma unroll
  for (int h = 1; h < G; ++h) acc = Lanes<Vec>::add(acc, x[h]);
  return acc;
}

// Units (Vec) [begin, end) of this block's grid-stride share: for each unit i,
// use(i, load(i)), with U loads in flight before the first use. Block b takes
// the same units of [begin, end) on every rank.
template <int U, class Load, class Use>
__device__ void for_units(std::size_t begin, std::size_t end, Load load, Use use) {
  using Vec = decltype(load(begin));
  const std::size_t stride = std::size_t{gridDim.x} * kThreads;
  std::size_t i = begin + std::size_t{blockIdx.x} * kThreads + threadIdx.x;
  for (; i + (U - 1) * stride < end; i += U * stride) {
    Vec s[U];
#pragma unroll
    for (int u = 0; u < U; ++u) s[u] = load(i + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) use(i + u * stride, s[u]);
  }
  for (; i < end; i += stride) use(i, load(i));
}

// The sum of unit i over every rank's a.src, for_units' usual load.
template <int G, class Vec>
struct SumAt {
  const Args& a;
  __device__ Vec operator()(std::size_t i) const { return sum_at<G, Vec>(a, i); }
};

// The floats after the last whole Vec: fewer than 4, block 0 takes them.
template <class Vec>
__device__ std::size_t tail_begin(std::size_t n) {
  return n / Lanes<Vec>::kWidth * Lanes<Vec>::kWidth;
}

template <int G, class Vec>
__global__ void __launch_bounds__(kThreads) one_shot(Args a) {
  // ---- your code here (one_shot) ----
  const unsigned t = threadIdx.x;
  const unsigned base = t < G ? a.counters[blockIdx.x] : 0u;
  const std::size_t units = a.n / Lanes<Vec>::kWidth;
  const std::size_t tail = tail_begin<Vec>(a.n);
  if (a.stage) {
    const std::size_t stride = std::size_t{gridDim.x} * kThreads;
    for (std::size_t i = std::size_t{blockIdx.x} * kThreads + t; i < units; i += stride)
      reinterpret_cast<Vec*>(a.stage)[i] = reinterpret_cast<const Vec*>(a.in)[i];
    if (blockIdx.x == 0 && tail + t < a.n) a.stage[tail + t] = a.in[tail + t];
  }
  meet_peers<G>(a, base + 1);
  Vec* out = reinterpret_cast<Vec*>(a.out[a.rank]);
  for_units<kUnroll<G>>(0, units, SumAt<G, Vec>{a}, [&](std::size_t i, Vec v) { out[i] = v; });
  if (blockIdx.x == 0 && tail + t < a.n) a.out[a.rank][tail + t] = sum_at<G, float>(a, tail + t);
  meet_peers<G>(a, base + 2);
  if (t == 0) a.counters[blockIdx.x] = base + 2;
  // ---- end ----
}

template <int G, class Vec>
__global__ void __launch_bounds__(kThreads) two_shot(Args a) {
  // ---- your code here (two_shot) ----
  const unsigned t = threadIdx.x;
  const unsigned base = t < G ? a.counters[blockIdx.x] : 0u;
  const std::size_t units = a.n / Lanes<Vec>::kWidth;
  const std::size_t tail = tail_begin<Vec>(a.n);
  const Vec* in = reinterpret_cast<const Vec*>(a.in);
  // Reduce-scatter, pushed: the part of every peer's share that this block
  // takes goes into that peer's inbox, by remote stores. Rank h's share is
  // [units*h/G, units*(h+1)/G): the same cut on every rank. No meeting is
  // needed first: the peer read its inbox last in the previous call, and
  // this GPU's previous call ended only once every peer had met it at the end.
#pragma unroll 1
  for (int k = 1; k < G; ++k) {
    const int h = (a.rank + k) % G;  // not all ranks onto rank 0's link at once
    const std::size_t begin = units * h / G, end = units * (h + 1) / G;
    Vec* slot = reinterpret_cast<Vec*>(inbox_slot(a, a.rank, h));
    for_units<8>(
        begin, end, [&](std::size_t i) { return in[i]; },
        [&](std::size_t i, Vec v) { slot[i - begin] = v; });
  }
  // The peers' parts of this rank's share have arrived.
  meet_peers<G>(a, base + 1);
  const std::size_t begin = units * a.rank / G, end = units * (a.rank + 1) / G;
  const Vec* from[G];  // unit begin of every rank's part of this share
#pragma unroll
  for (int h = 0; h < G; ++h)
    from[h] = h == a.rank ? in + begin : reinterpret_cast<const Vec*>(inbox_slot(a, h, a.rank));
  // All-gather, pushed: the sum of each unit of the share into every output.
  for_units<kUnroll<G>>(
      begin, end,
      [&](std::size_t i) {
        Vec x[G];
#pragma unroll
        for (int h = 0; h < G; ++h) x[h] = from[h][i - begin];
        Vec acc = x[0];
#pragma unroll
        for (int h = 1; h < G; ++h) acc = Lanes<Vec>::add(acc, x[h]);
        return acc;
      },
      [&](std::size_t i, Vec v) {
#pragma unroll
        for (int h = 0; h < G; ++h) reinterpret_cast<Vec*>(a.out[h])[i] = v;
      });
  if (a.rank == 0 && blockIdx.x == 0 && tail + t < a.n) {
    const float v = sum_at<G, float>(a, tail + t);
#pragma unroll
    for (int h = 0; h < G; ++h) a.out[h][tail + t] = v;
  }
  meet_peers<G>(a, base + 2);
  if (t == 0) a.counters[blockIdx.x] = base + 2;
  // ---- end ----
}

// One GPU: the all-reduce is a copy, made by a kernel (a lab file makes no
// copies through the runtime's copy calls: the policy check forbids them all).
__global__ void copy_floats(float* out, const float* in, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = in[i];
}

unsigned copy_blocks(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 1024));
}

using Kernel = void (*)(Args);

template <int G>
Kernel pick(AllreduceAlgorithm algorithm, bool vectors) {
  if (algorithm == AllreduceAlgorithm::kOneShot)
    return vectors ? one_shot<G, float4> : one_shot<G, float>;
  return vectors ? two_shot<G, float4> : two_shot<G, float>;
}

Kernel kernel_for(int gpus, AllreduceAlgorithm algorithm, bool vectors) {
  switch (gpus) {
    case 2: return pick<2>(algorithm, vectors);
    case 3: return pick<3>(algorithm, vectors);
    case 4: return pick<4>(algorithm, vectors);
    case 5: return pick<5>(algorithm, vectors);
    case 6: return pick<6>(algorithm, vectors);
    case 7: return pick<7>(algorithm, vectors);
    default: return pick<8>(algorithm, vectors);
  }
}

AllreduceAlgorithm choose(std::size_t n, int gpus) {
  const bool small = gpus > 2 && n * sizeof(float) <= kOneShotMaxBytesManyGpus;
  return small ? AllreduceAlgorithm::kOneShot : AllreduceAlgorithm::kTwoShot;
}

bool stages(std::size_t n) { return n <= kOneShotMaxFloats; }

int sm_count(int device) {
  static std::array<int, 64> cached{};  // ordinals past 63 are asked each time
  if (device >= 0 && device < 64 && cached[device] > 0) return cached[device];
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (device >= 0 && device < 64) cached[device] = sms;
  return sms;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Puts the caller's current device back however the call ends.
class KeepDevice {
 public:
  KeepDevice() { CUDA_CHECK(cudaGetDevice(&device_)); }
  ~KeepDevice() { cudaSetDevice(device_); }
  KeepDevice(const KeepDevice&) = delete;
  KeepDevice& operator=(const KeepDevice&) = delete;

 private:
  int device_ = 0;
};

}  // namespace lab12

using namespace lab12;

std::size_t allreduce_workspace_bytes(std::size_t n, int gpus) {
  if (gpus < 2) return 0;
  const std::size_t stage = stages(n) ? n : 0;
  const std::size_t inbox = static_cast<std::size_t>(gpus - 1) * Layout::slot_floats(n, gpus);
  return Layout::kHeaderBytes + std::max(stage, inbox) * sizeof(float);
}

void allreduce_sum(const AllreduceRank* ranks, int gpus, std::size_t n,
                   AllreduceAlgorithm algorithm) {
  if (gpus < 1 || gpus > kAllreduceMaxGpus)
    throw std::invalid_argument("allreduce_sum: gpus must be 1 to " +
                                std::to_string(kAllreduceMaxGpus) + ", not " +
                                std::to_string(gpus));
  if (n == 0) return;
  const KeepDevice keep;
  if (gpus == 1) {
    // ---- your code here (one_gpu) ----
    if (ranks[0].out != ranks[0].in) {
      CUDA_CHECK(cudaSetDevice(ranks[0].device));
      copy_floats<<<copy_blocks(n), 256, 0, ranks[0].stream>>>(ranks[0].out, ranks[0].in, n);
      CUDA_CHECK_LAUNCH();
    }
    // ---- end ----
    return;
  }
  if (algorithm == AllreduceAlgorithm::kAuto) algorithm = choose(n, gpus);
  // The copy that makes one-shot safe in place exists only up to
  // kOneShotMaxFloats (it would double the memory of a large call);
  // beyond it, an in-place call goes two-shot, which needs none.
  bool in_place = false;
  for (int r = 0; r < gpus; ++r) in_place = in_place || ranks[r].out == ranks[r].in;
  if (algorithm == AllreduceAlgorithm::kOneShot && in_place && !stages(n))
    algorithm = AllreduceAlgorithm::kTwoShot;

  Args a{};
  a.n = n;
  a.slot = Layout::slot_floats(n, gpus);
  bool vectors = true;
  int fewest_sms = 1 << 30;
  for (int r = 0; r < gpus; ++r) {
    const AllreduceRank& k = ranks[r];
    const bool staged = algorithm == AllreduceAlgorithm::kOneShot && k.out == k.in;
    a.src[r] = staged ? Layout::stage(k.workspace) : k.in;
    a.out[r] = k.out;
    a.flags[r] = Layout::flags(k.workspace);
    a.inbox[r] = Layout::inbox(k.workspace);
    vectors = vectors && aligned16(k.in) && aligned16(k.out) && aligned16(a.src[r]);
    fewest_sms = std::min(fewest_sms, sm_count(k.device));
  }
  // Block b must cover the same elements on every GPU: one grid for all.
  const std::size_t per_rank =
      algorithm == AllreduceAlgorithm::kOneShot ? n : (n + gpus - 1) / gpus;
  const std::size_t units = vectors ? per_rank / 4 + 1 : per_rank;
  const unsigned blocks = static_cast<unsigned>(std::clamp<std::size_t>(
      (units + kThreads - 1) / kThreads, 1,
      std::min<std::size_t>(kMaxBlocks, std::size_t{kBlocksPerSm} * fewest_sms)));
  const Kernel kernel = kernel_for(gpus, algorithm, vectors);
  for (int r = 0; r < gpus; ++r) {
    const AllreduceRank& k = ranks[r];
    Args mine = a;
    mine.rank = r;
    mine.in = k.in;
    mine.stage = a.src[r] == k.in ? nullptr : Layout::stage(k.workspace);
    mine.counters = Layout::counters(k.workspace);
    CUDA_CHECK(cudaSetDevice(k.device));
    kernel<<<blocks, kThreads, 0, k.stream>>>(mine);
    CUDA_CHECK_LAUNCH();
  }
}
