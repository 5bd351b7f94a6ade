// GPU side of the benchmark routine: CUDA-event clock, input sizing so that no
// timed call reads from L2, the floor of a call timed beside the calls it
// bounds, and the copy ceiling measured in the same process.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "bench.hpp"
#include "device_info.hpp"

namespace lab {

// Each call is queued on `stream`; batches are timed with CUDA events.
BenchResult bench_device(const std::function<void(long call)>& call, std::size_t bytes_per_call,
                         cudaStream_t stream, const BenchConfig& config = {});

// Elements for a bandwidth test: at least 2^26 and at least 8x the L2 cache,
// rounded up to a power of two (2^27 ints on a 60 MiB-L2 H200).
std::size_t bandwidth_test_elements(const DeviceInfo& info, std::size_t element_bytes);

// How many copies of an input to rotate through so that the bytes touched
// between two reads of the same copy are at least 8x the L2 (and at least 2
// copies): every timed call then reads from device memory, not from L2.
std::size_t rotation_count(std::size_t input_bytes, const DeviceInfo& info);

// The floor of a call, and the calls it bounds, timed by one routine
// (bench_in_turn: the same events, batches of the same length, rounds in turn).
// The floor is the larger of two costs no call can go below:
// - the launch: an empty kernel, launched as the calls are (one launch, its
//   error checked, back to back on `stream`), given the call's input pointer
//   (rotated as the calls rotate theirs) and reading nothing; its fastest
//   batch over every round. A call launches at least one kernel.
// - the bytes: the input read once at the GPU's theoretical bandwidth.
// The larger, not the sum: in a batch the host launches call k+1 while the GPU
// still reads call k's input, so a call's time is at least each of the two
// but not their sum (a launch-bound call hides its bytes under the next launch).
struct FloorBench {
  std::vector<BenchResult> calls;  // in the order given: each one's best round
  BenchResult launch;              // the empty kernel, timed alike
  double bytes_ms = 0.0;           // the input at the GPU's theoretical bandwidth
  double launch_ms() const { return launch.min_ms; }
  double floor_ms() const { return launch.min_ms > bytes_ms ? launch.min_ms : bytes_ms; }
};

// `input(k)`: the input pointer call k reads (so the empty kernel takes the
// same argument); `calls[i](k)` queues call k of contender i on `stream`.
FloorBench bench_with_floor(const std::vector<std::function<void(long call)>>& calls,
                            const std::function<const void*(long call)>& input,
                            std::size_t bytes_per_call, double theoretical_gbps,
                            cudaStream_t stream, int rounds, const BenchConfig& config = {});

// Device-to-device cudaMemcpyAsync of `bytes`, as GB/s of bytes read plus bytes
// written: what this GPU's memory system delivers, the ceiling thresholds are
// fractions of.
double copy_ceiling_gbps(std::size_t bytes, cudaStream_t stream, const BenchConfig& config = {});

// The size copy_ceiling_gbps uses by default: 1 GiB per side, less on small GPUs.
std::size_t copy_ceiling_bytes(const DeviceInfo& info);

}  // namespace lab
