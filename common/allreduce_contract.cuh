// The contract of lab 12: a float sum all-reduce over the GPUs of one process.
// The tests and the benchmark are written against these functions only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// The most GPUs one call spans: what one NVSwitch box holds.
inline constexpr int kAllreduceMaxGpus = 8;

// What a call does to move the data. kAuto picks by size and GPU count.
enum class AllreduceAlgorithm : int {
  kAuto = 0,
  kOneShot = 1,  // every GPU reads every peer's whole buffer and adds
  kTwoShot = 2,  // reduce-scatter (GPU r sums its 1/G of the elements), then all-gather
};

inline const char* algorithm_name(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::kAuto: return "auto";
    case AllreduceAlgorithm::kOneShot: return "one_shot";
    case AllreduceAlgorithm::kTwoShot: return "two_shot";
  }
  return "?";
}

// One GPU's part in a call: ranks[r] of the array passed to allreduce_sum.
struct AllreduceRank {
  int device = 0;                 // CUDA ordinal
  const float* in = nullptr;      // n floats on `device`
  float* out = nullptr;           // n floats on `device`; out == in is an in-place call
  void* workspace = nullptr;      // allreduce_workspace_bytes(n, gpus) bytes on `device`
  cudaStream_t stream = nullptr;  // a stream of `device`
};

// Bytes of workspace each GPU needs for n floats over `gpus` GPUs.
//
// The workspace rule of every contract (sum_contract.cuh): the caller zeroes
// each GPU's workspace once, when it allocates it (done before the first call:
// a peer GPU may write into it from the first instruction of its part of that
// call, before this GPU's stream has reached it), and passes it unchanged to
// every call with that n and that list of GPUs; a call finds it as the previous
// call left it, and may keep counters there (lab 12 keeps the flags its GPUs
// signal each other with). One set of workspaces serves one call at a time:
// two calls in flight at once, on other streams, need their own.
std::size_t allreduce_workspace_bytes(std::size_t n, int gpus);

// For every rank r: ranks[r].out[i] = the sum over GPUs of ranks[g].in[i], for
// i in [0, n), added in rank order, ((in_0 + in_1) + in_2) + ..., so every GPU
// gets the same bits. With one GPU the call is a copy (or nothing, in place).
//
// Asynchronous: each rank's work is queued on its stream and nothing waits for
// a GPU on the host. A rank's output is ready when its stream reaches the
// call's end, and its input may be overwritten from then on: no GPU's part of
// the call ends before every GPU is done reading its buffers.
//
// Every rank's in, out and workspace must be readable and writable from every
// other rank's device (cudaDeviceEnablePeerAccess for cudaMalloc'd memory,
// cuMemSetAccess for every device when the memory comes from cuMemCreate), and
// `gpus` distinct devices, 1 to kAllreduceMaxGpus, in the same order on every
// call. Buffers of any alignment work; when every in and out is 16-byte
// aligned the kernels read and write 16 bytes at a time. The current device on
// return is the one the caller had. Throws lab::CudaError or
// std::invalid_argument.
void allreduce_sum(const AllreduceRank* ranks, int gpus, std::size_t n,
                   AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto);

// The address, on the current device, of an int that a kernel still containing
// the skeleton's LAB_TODO() sets to 1 (lab_fence.cuh).
void* lab_todo_flag_address();
