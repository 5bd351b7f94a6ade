// Lab 09: warp shuffles and 16-byte loads, one pass. The handout is README.md.
//
// What lab 07 leaves on the table: at large sizes it is still behind CUB.
// Every load moves 4 bytes, so a warp needs many load instructions in flight
// to keep the memory busy, and every block spends a shared-memory tree with 8
// barriers on its result.
//
// This kernel, for int sum and float max alike:
//   - loads 16 bytes per thread per instruction (int4 / float4), kLoads of
//     them in flight before the first is used: 64 bytes per thread;
//   - gives each block one contiguous share of the input, read in tiles (as
//     CUB does), rather than striding over all of it; the block shape and
//     kBlocksPerSm were chosen by sweeps on an H200 (the deck's debrief);
//   - reduces within a warp by shuffles, in registers: no shared memory and
//     no barrier until the 32 warp results meet, once;
//   - finishes in the same launch, and in one launch per call: no memset
//     first. The workspace is kept between calls (sum_contract.cuh), so it
//     holds a count of finished blocks that the last block puts back to zero.
//     For the sum, one 64-bit atomicAdd per block carries both its total and
//     its arrival; the block that completes the count writes *out. For the
//     max, floats have no atomicMax, and an integer atomicMax on a float's
//     bits orders negative floats backwards; order_key() maps floats to
//     unsigned keys that sort as lab::max_op does. The key shares the 64-bit
//     word with the count (Max::finish says how), so the last block to finish
//     gets the largest key from the atomic that counts it, and turns it back
//     into a float: one trip to L2 as for the sum (two for a block whose key
//     raises the word's);
//   - compares floats with one instruction per element: PTX max.NaN.f32
//     returns NaN if either operand is NaN and ranks +0.0 above -0.0, which is
//     lab::max_op (the tests' signed_zeros and negative_zeros cases check the
//     zeros on every GPU they run on). lab::max_op itself costs about 8
//     instructions, enough to make this memory-bound kernel nearly issue-bound.
// 16-byte loads need 16-byte aligned addresses: a pointer that starts 1 to 3
// elements past a boundary gets its first elements (the head) and its last
// n mod 4 (the tail) added one by one.
//
// Only the fenced regions are yours; the grader restores everything else.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "lab_fence.cuh"
#include "max_contract.cuh"
#include "max_op.hpp"
#include "sum_contract.cuh"
#include "tree_passes.cuh"

// A named namespace, not an anonymous one: the skeleton leaves these unused
// until its fences are written, and nvcc warns about unused internal names.
namespace lab09 {

constexpr unsigned kThreads = 1024;
constexpr int kLoads = 4;  // 16-byte loads in flight per thread
// One wave of blocks: with the one-launch finish, thread 0 of each block waits
// for its atomic's answer before the block leaves, and a second wave would
// wait on the first's atomics.
constexpr unsigned kBlocksPerSm = 2;
inline constexpr unsigned kFullMask = 0xffffffffu;  // every lane takes part

// Floats as unsigned keys that order as lab::max_op does: NaN above all,
// +0.0 above -0.0, negatives below positives, larger magnitudes of negatives
// lower. Key 0 is below every float, -inf included.
__device__ unsigned order_key(float f) {
  if (f != f) return 0xffffffffu;
  const unsigned bits = __float_as_uint(f);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__device__ float from_key(unsigned key) {
  if (key == 0xffffffffu) return NAN;
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// lab::max_op in one instruction (see the top of the file); GPUs before
// sm_80 have no max.NaN and take the long way.
__device__ float max_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float m;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b));
  return m;
#else
  return lab::max_op(a, b);
#endif
}

// What the workspace holds between calls: zero, and zero again after each
// call, because the last block to finish resets what it used.
union Finish {
  unsigned long long sum;  // Sum: the total so far (high 32 bits), blocks finished (low 32)
  unsigned long long max;  // Max: the largest key so far (high 32 bits), blocks finished (low 32)
};

// The two reductions of this lab, on 4-byte values and their 16-byte vectors.
struct Sum {
  using T = int;
  using Vec = int4;
  __device__ static T identity() { return 0; }
  __device__ static T combine(T a, T b) { return a + b; }
  __device__ static T fold(Vec v) { return (v.x + v.y) + (v.z + v.w); }
  // Thread 0 of each block, once. One atomic adds the block's total and counts
  // the block: no fence, no second atomic. A carry out of the total's 32 bits
  // falls off the top of the word, and int addition wraps the same way.
  __device__ void finish(T block_total) const {
    const unsigned long long mine =
        (static_cast<unsigned long long>(static_cast<unsigned>(block_total)) << 32) | 1u;
    const unsigned long long before = atomicAdd(&state->sum, mine);
    if (static_cast<unsigned>(before) == gridDim.x - 1) {  // every other block is in
      *out = static_cast<int>(static_cast<unsigned>((before + mine) >> 32));
      state->sum = 0;  // ready for the next call; no block of this one touches it again
    }
  }
  int* out;
  Finish* state;
};

struct Max {
  using T = float;
  using Vec = float4;
  __device__ static T identity() { return -INFINITY; }
  __device__ static T combine(T a, T b) { return max_nan(a, b); }
  __device__ static T fold(Vec v) { return max_nan(max_nan(v.x, v.y), max_nan(v.z, v.w)); }
  // Thread 0 of each block, once. The key and the count share one 64-bit word,
  // so the atomic that tells the last block it is last also hands it the
  // largest key: no fence, and no exchange afterwards. An atomicMax and an
  // atomicAdd can share a word because two atomics of one thread on one word
  // take effect in the order they were issued (coherence, in C++ and in PTX
  // alike): both go out at once, one trip to L2. A key that raises the word's
  // key writes 0 under it, so atomicMax takes the count away; the block that
  // did so got that count back from atomicMax and adds it back. Until it has,
  // the count stays short of gridDim.x, and no block can be taken for the last.
  __device__ void finish(T block_max) const {
    const unsigned long long mine = static_cast<unsigned long long>(order_key(block_max)) << 32;
    const unsigned long long before_max = atomicMax(&state->max, mine);
    unsigned long long before = atomicAdd(&state->max, 1ull), added = 1;
    if (mine > before_max && static_cast<unsigned>(before_max) != 0) {
      added = static_cast<unsigned>(before_max);  // the count our key wrote over
      before = atomicAdd(&state->max, added);
    }
    if (static_cast<unsigned>(before) + added == gridDim.x) {  // every block is counted
      *out = from_key(static_cast<unsigned>(before >> 32));
      state->max = 0;  // ready for the next call; no block of this one touches it again
    }
  }
  float* out;
  Finish* state;
};

// The combination of v over the 32 lanes of a warp, in lane 0.
template <class Op>
__device__ typename Op::T warp_reduce(typename Op::T v) {
  // ---- your code here (warp_reduce) ----
  // TODO: leave in lane 0 the combination of the v of all 32 lanes, by warp shuffles
  // alone: registers only, no shared memory, no barrier. The other lanes may end with
  // anything. Combine only through Op, so that one code serves the int sum and the float
  // max (NaN wins, +0.0 above -0.0). Every lane named in kFullMask must reach every
  // shuffle: none may sit in a branch that some lanes skip.
  // The handout (README.md) states the goal; `python3 -m grader hint 09` gives hints.
  LAB_TODO();
  return v;
  // ---- end ----
}

// One pass over in[0, n): each block combines its share and calls op.finish
// once, from thread 0.
template <class Op>
__global__ void __launch_bounds__(kThreads)
    vector_reduce(const typename Op::T* __restrict__ in, std::size_t n, Op op) {
  // ---- your code here (vector_reduce) ----
  // TODO: each block combines one contiguous share of in[0, n), read by 16-byte vector
  // loads, kLoads in flight per thread; thread 0 hands the block's result to op.finish
  // once. One pass, one barrier, warp shuffles for the rest. Traps the tests check: `in`
  // may start 1 to 3 elements past a 16-byte boundary and n need not be a multiple of 4,
  // so what lies outside the whole vectors is read one element at a time (a misaligned
  // 16-byte load stops the kernel); n goes above 2^32, so indices are 64-bit; a block with
  // an empty share still reaches the barrier and calls op.finish (finish counts blocks).
  // The handout (README.md) states the goal; `python3 -m grader hint 09` gives hints.
  LAB_TODO();
  // ---- end ----
}

unsigned grid_blocks(std::size_t n) {
  return lab::fill_grid_blocks(n / 4 + 1, kThreads * kLoads, kBlocksPerSm);
}

}  // namespace lab09

using namespace lab09;

std::size_t sum_workspace_bytes(std::size_t) { return sizeof(Finish); }

void reduce_sum(const int* in, std::size_t n, int* out, void* workspace, cudaStream_t stream) {
  if (n == 0) {
    lab::store_value(out, 0, stream);
    return;
  }
  vector_reduce<Sum>
      <<<grid_blocks(n), kThreads, 0, stream>>>(in, n, Sum{out, static_cast<Finish*>(workspace)});
  CUDA_CHECK_LAUNCH();
}

std::size_t max_workspace_bytes(std::size_t) { return sizeof(Finish); }

void reduce_max(const float* in, std::size_t n, float* out, void* workspace, cudaStream_t stream) {
  if (n == 0) {
    lab::store_value(out, -INFINITY, stream);
    return;
  }
  vector_reduce<Max>
      <<<grid_blocks(n), kThreads, 0, stream>>>(in, n, Max{out, static_cast<Finish*>(workspace)});
  CUDA_CHECK_LAUNCH();
}
