// Lab 11: accurate float sums. The handout is README.md in this folder.
//
// Every float addition rounds to 24 significant bits. Adding a small value to
// a large running sum loses the small value's low bits, or all of it; large
// values that cancel leave behind only the rounding errors of the additions
// that made them. How much is lost depends on the order and on the precision
// of the accumulator, and all four methods here read the same bytes:
//   - naive: a float register per thread over its share of the input, then
//     a float tree. Each thread adds hundreds of values into one register.
//   - pairwise: one element per thread, then the float tree of lab 04: every
//     value goes through only log2(n) additions, each between partial sums of
//     similar size. The error grows with log2(n), not with n.
//   - compensated (Kahan, in Neumaier's form): each thread carries, beside its
//     sum s, the sum c of what rounding threw away; TwoSum gives the exact
//     error of each addition whichever operand is larger (Kahan's original
//     step assumes |s| >= |x|, and loses accuracy when inputs of random sign
//     and size keep s small). The tree combines (s, c) pairs the same way.
//     The error no longer grows with n.
//   - double: accumulate in double (53 bits) and round once at the end. On a
//     Hopper GPU double addition runs at half the float rate.
// Common advice says: double, and sort first. The deck's debrief measures
// what each method gains, and what a sort costs.
//
// Naive, compensated and double share one kernel, shaped like lab 09's: 16-byte
// loads, 4 in flight per thread, one contiguous share per block, warp shuffles,
// and one launch per call (the last block to finish combines the blocks'
// accumulators, counted in the workspace, which the contract keeps between
// calls). That finish costs three trips to L2 in the last block (its
// accumulator out, the count, the others' accumulators in) where lab 09's sum
// needs one. So the kernel is launched as a programmatic dependent
// (run_accumulate): the next call's grid starts while this one's last block
// finishes, instead of after.
//
// Only the fenced regions are yours; the grader restores everything else.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cuda/atomic>

#include "float_sum_contract.cuh"
#include "lab_fence.cuh"
#include "tree_passes.cuh"

namespace lab11 {

constexpr unsigned kThreads = 256;  // pairwise: a power of two, the tree halves it
// The other methods: lab 09's shape, 2 blocks per SM (one wave of blocks:
// TwoSum's additions make a second wave's tail cost more), the fastest of the
// shapes swept on an H200 at 2^24.
constexpr unsigned kVecThreads = 1024;
constexpr int kVecLoads = 4;  // 16-byte loads in flight per thread
constexpr unsigned kVecBlocksPerSm = 2;
inline constexpr unsigned kFullMask = 0xffffffffu;

// Accumulators: identity, add one input, combine two partial results, round to float.
struct Naive {
  float s;
  __device__ static Naive identity() { return {0.0f}; }
  __device__ void add(float x) { s += x; }
  __device__ void combine(const Naive& o) { s += o.s; }
  __device__ Naive shfl_down(int offset) const { return {__shfl_down_sync(kFullMask, s, offset)}; }
  __device__ float result() const { return s; }
};

// 8-byte aligned: a block's result goes to the workspace in one store.
struct alignas(8) Kahan {
  float s;  // the running sum
  float c;  // the rounding errors of the additions into s, to be added back
  __device__ static Kahan identity() { return {0.0f, 0.0f}; }
  __device__ void add(float x) {
    // ---- your code here (kahan_add) ----
    // TwoSum: t + e == s + x exactly, whatever their sizes.
    const float t = s + x;
    const float z = t - s;
    const float e = (s - (t - z)) + (x - z);
    s = t;
    c += e;
    // ---- end ----
  }
  __device__ void combine(const Kahan& o) {
    // ---- your code here (kahan_combine) ----
    // TwoSum: t + e == s + o.s exactly, whatever their sizes.
    const float t = s + o.s;
    const float z = t - s;
    const float e = (s - (t - z)) + (o.s - z);
    s = t;
    c = c + o.c + e;
    // ---- end ----
  }
  __device__ float result() const { return s + c; }
  __device__ Kahan shfl_down(int offset) const {
    return {__shfl_down_sync(kFullMask, s, offset), __shfl_down_sync(kFullMask, c, offset)};
  }
};

struct Double {
  double s;
  __device__ static Double identity() { return {0.0}; }
  __device__ void add(float x) {
    // ---- your code here (double_add) ----
    s += static_cast<double>(x);
    // ---- end ----
  }
  __device__ void combine(const Double& o) { s += o.s; }
  __device__ Double shfl_down(int offset) const { return {__shfl_down_sync(kFullMask, s, offset)}; }
  __device__ float result() const { return static_cast<float>(s); }
};

// The accumulators of a warp combined into lane 0's, by shuffles.
template <class Acc>
__device__ Acc warp_combine(Acc acc) {
  for (int offset = 16; offset > 0; offset >>= 1) acc.combine(acc.shfl_down(offset));
  return acc;
}

// The accumulators of a block combined into thread 0's. Every thread calls it.
template <class Acc>
__device__ Acc block_combine(Acc acc) {
  __shared__ Acc warp_accs[kVecThreads / 32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  acc = warp_combine(acc);
  __syncthreads();  // a previous call's readers are done with warp_accs
  if (lane == 0) warp_accs[warp] = acc;
  __syncthreads();
  if (warp == 0) acc = warp_combine(lane < kVecThreads / 32 ? warp_accs[lane] : Acc::identity());
  return acc;
}

// Another block's accumulator, read from L2: it was written on another SM.
template <class Acc>
__device__ Acc load_from_l2(const Acc* p) {
  static_assert(sizeof(Acc) % 4 == 0, "read as 32-bit words");
  unsigned words[sizeof(Acc) / 4];
  const auto* from = reinterpret_cast<const unsigned*>(p);
  for (unsigned k = 0; k < sizeof(Acc) / 4; ++k) words[k] = __ldcg(from + k);
  Acc acc;
  memcpy(&acc, words, sizeof acc);
  return acc;
}

// What the workspace holds: the count of finished blocks (zero between calls:
// the last block puts it back), then one accumulator per block.
constexpr std::size_t kAccsOffset = 16;

// One launch: each block accumulates one contiguous share of in[0, n) and
// stores its accumulator; the last block to finish combines them all, in block
// order whichever block is last (the same input gives the same bits), and
// writes *out.
template <class Acc>
__global__ void __launch_bounds__(kVecThreads, 2)  // 2 blocks per SM: 32 registers at most
    accumulate(const float* __restrict__ in, std::size_t n, float* out, unsigned char* workspace) {
#if __CUDA_ARCH__ >= 900
  // Launched as a programmatic dependent (run_accumulate): this grid may start
  // while the kernel before it on the stream is still finishing. Wait for that
  // kernel (its writes, the input's among them, are then visible), then let
  // the next call's grid start in turn.
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
  // A head up to the first 16-byte boundary, whole vectors, a tail. Lab 09's
  // split and tiles, written again on purpose: in lab 09 they are the
  // student's fenced code, so no shared helper may hold them.
  const std::size_t misaligned = (reinterpret_cast<std::uintptr_t>(in) / sizeof(float)) % 4;
  const std::size_t head = misaligned ? (4 - misaligned < n ? 4 - misaligned : n) : 0;
  const float4* body = reinterpret_cast<const float4*>(in + head);
  const std::size_t vectors = (n - head) / 4;
  const std::size_t tail = head + vectors * 4;
  const std::size_t tile = std::size_t{kVecThreads} * kVecLoads;
  const std::size_t tiles_per_block = ((vectors + tile - 1) / tile + gridDim.x - 1) / gridDim.x;
  const std::size_t begin = blockIdx.x * tiles_per_block * tile;
  const std::size_t end =
      begin + tiles_per_block * tile < vectors ? begin + tiles_per_block * tile : vectors;
  // One accumulator: a second or a fourth (one per lane of a float4) breaks
  // TwoSum's chain of dependent additions, but takes the kernel past 32
  // registers, and 1024-thread blocks then fit once per SM instead of twice,
  // which is slower.
  Acc acc = Acc::identity();
  std::size_t base = begin;
  for (; base + tile <= end; base += tile) {
    float4 x[kVecLoads];
#pragma unroll
    for (int k = 0; k < kVecLoads; ++k) x[k] = __ldcs(body + base + k * kVecThreads + threadIdx.x);
#pragma unroll
    for (int k = 0; k < kVecLoads; ++k) {
      acc.add(x[k].x);
      acc.add(x[k].y);
      acc.add(x[k].z);
      acc.add(x[k].w);
    }
  }
  for (std::size_t i = base + threadIdx.x; i < end; i += kVecThreads) {
    const float4 x = __ldcs(body + i);
    acc.add(x.x);
    acc.add(x.y);
    acc.add(x.z);
    acc.add(x.w);
  }
  const std::size_t t = std::size_t{blockIdx.x} * kVecThreads + threadIdx.x;
  if (t < head) acc.add(in[t]);
  if (t < n - tail) acc.add(in[tail + t]);
  const Acc mine = block_combine(acc);

  auto* block_accs = reinterpret_cast<Acc*>(workspace + kAccsOffset);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    block_accs[blockIdx.x] = mine;
    // acq_rel: our accumulator is visible to whichever block counts after us,
    // and the last block sees every accumulator counted before it. Cheaper
    // than __threadfence(), a sequentially consistent fence.
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> finished(
        *reinterpret_cast<unsigned*>(workspace));
    last = finished.fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1;
    if (last) finished.store(0, cuda::memory_order_relaxed);  // ready for the next call
  }
  __syncthreads();
  if (!last) return;
  Acc total = Acc::identity();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kVecThreads)
    total.combine(load_from_l2(block_accs + b));
  total = block_combine(total);
  if (threadIdx.x == 0) *out = total.result();
}

// Pairwise: one element per thread and lab 04's tree, in float, over passes.
__global__ void pairwise_block(const float* __restrict__ in, std::size_t n, float* block_sums) {
  __shared__ float partial[kThreads];
  const std::size_t i = std::size_t{blockIdx.x} * kThreads + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) block_sums[blockIdx.x] = partial[0];
}

unsigned accumulate_blocks(std::size_t n) {
  return lab::fill_grid_blocks(n / 4 + 1, kVecThreads * kVecLoads, kVecBlocksPerSm);
}

// Launched with programmatic stream serialization where the GPU has it
// (compute capability 9.0 on): once every block of this grid has started, the
// next kernel on the stream may be launched, and its blocks take the SMs that
// this grid's blocks leave, waiting in cudaGridDependencySynchronize() for the
// last block's finish. Its launch no longer waits for this grid to end.
template <class Acc>
void run_accumulate(const float* in, std::size_t n, float* out, void* workspace,
                    cudaStream_t stream) {
  int device = 0, major = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  cudaLaunchAttribute early[1] = {};
  early[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(accumulate_blocks(n));
  config.blockDim = dim3(kVecThreads);
  config.stream = stream;
  config.attrs = early;
  config.numAttrs = major >= 9 ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, accumulate<Acc>, in, n, out,
                                static_cast<unsigned char*>(workspace)));
}

}  // namespace lab11

using namespace lab11;

std::size_t float_sum_workspace_bytes(std::size_t n) {
  // The pairwise tree's partials start after the count, which they leave alone.
  const std::size_t accumulators = accumulate_blocks(n) * sizeof(Double);
  const std::size_t tree = lab::tree_workspace_elements(n, kThreads) * sizeof(float);
  return kAccsOffset + (accumulators > tree ? accumulators : tree);
}

void reduce_sum_float(const float* in, std::size_t n, float* out, void* workspace,
                      FloatSumMethod method, cudaStream_t stream) {
  if (n == 0) {
    lab::store_value(out, 0.0f, stream);
    return;
  }
  switch (method) {
    case FloatSumMethod::kNaive: return run_accumulate<Naive>(in, n, out, workspace, stream);
    case FloatSumMethod::kKahan: return run_accumulate<Kahan>(in, n, out, workspace, stream);
    case FloatSumMethod::kDouble: return run_accumulate<Double>(in, n, out, workspace, stream);
    case FloatSumMethod::kPairwise:
      return lab::run_tree_passes<float>(
          pairwise_block, kThreads, kThreads, in, n, out,
          reinterpret_cast<float*>(static_cast<unsigned char*>(workspace) + kAccsOffset), 0.0f,
          stream);
  }
}
