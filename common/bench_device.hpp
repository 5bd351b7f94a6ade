// GPU side of the benchmark routine: CUDA-event clock, input sizing so that no
// timed call reads from L2, and the copy ceiling measured in the same process.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

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

// The launch floor: milliseconds per call of an empty kernel, timed as
// bench_device times every call (back to back on `stream`, events around each
// batch). No reduction can cost less per call than this plus its bytes at the
// GPU's theoretical bandwidth: on an H200 it measured 3.5 to 4.7 us (the host's
// launch rate sets it; tests/gpu_runs/h200/bench-fac4fd8.json, floor_us), the
// whole cost of a call below about 2^20 elements.
double launch_floor_ms(cudaStream_t stream, const BenchConfig& config = {});

// Device-to-device cudaMemcpyAsync of `bytes`, as GB/s of bytes read plus bytes
// written: what this GPU's memory system delivers, the ceiling thresholds are
// fractions of.
double copy_ceiling_gbps(std::size_t bytes, cudaStream_t stream, const BenchConfig& config = {});

// The size copy_ceiling_gbps uses by default: 1 GiB per side, less on small GPUs.
std::size_t copy_ceiling_bytes(const DeviceInfo& info);

}  // namespace lab
