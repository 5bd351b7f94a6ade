#include <algorithm>

#include "bench_device.hpp"
#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "event_timer.cuh"

namespace lab {

namespace {

// Calls queued on `stream`, timed in batches with CUDA events.
TimeCalls device_batches(const std::function<void(long call)>& call, EventTimer& timer,
                         cudaStream_t stream) {
  return [&call, &timer, stream](long first, int count) {
    timer.start(stream);
    for (int k = 0; k < count; ++k) call(first + k);
    return static_cast<double>(timer.stop_ms());
  };
}

__global__ void floor_kernel(const void* /*input: taken, never read*/) {}

}  // namespace

BenchResult bench_device(const std::function<void(long call)>& call, std::size_t bytes_per_call,
                         cudaStream_t stream, const BenchConfig& config) {
  EventTimer timer;
  return bench_calls(device_batches(call, timer, stream), bytes_per_call, config);
}

FloorBench bench_with_floor(const std::vector<std::function<void(long call)>>& calls,
                            const std::function<const void*(long call)>& input,
                            std::size_t bytes_per_call, double theoretical_gbps,
                            cudaStream_t stream, int rounds, const BenchConfig& config) {
  const std::function<void(long)> empty = [&](long k) {
    floor_kernel<<<1, 32, 0, stream>>>(input(k));
    CUDA_CHECK_LAUNCH();
  };
  EventTimer timer;
  std::vector<TimeCalls> timed = {device_batches(empty, timer, stream)};
  for (const auto& call : calls) timed.push_back(device_batches(call, timer, stream));
  std::vector<BenchResult> results = bench_in_turn(timed, bytes_per_call, rounds, config);
  FloorBench out;
  out.launch = results.front();
  out.launch.bytes_per_call = 0;
  out.calls.assign(results.begin() + 1, results.end());
  out.bytes_ms = theoretical_gbps > 0 ? bytes_per_call / (theoretical_gbps * 1e6) : 0.0;
  return out;
}

std::size_t bandwidth_test_elements(const DeviceInfo& info, std::size_t element_bytes) {
  const std::size_t at_least =
      std::max<std::size_t>(std::size_t{1} << 26, 8 * info.l2_bytes / element_bytes);
  std::size_t n = 1;
  while (n < at_least) n <<= 1;
  return n;
}

std::size_t rotation_count(std::size_t input_bytes, const DeviceInfo& info) {
  const std::size_t working_set = 8 * info.l2_bytes;
  const std::size_t copies =
      (working_set + input_bytes - 1) / std::max<std::size_t>(input_bytes, 1);
  return std::max<std::size_t>(2, copies);
}

std::size_t copy_ceiling_bytes(const DeviceInfo& info) {
  return std::min<std::size_t>(std::size_t{1} << 30, info.free_mem_bytes / 4);
}

double copy_ceiling_gbps(std::size_t bytes, cudaStream_t stream, const BenchConfig& config) {
  DeviceBuffer<unsigned char> src(bytes), dst(bytes);
  src.fill_bytes(0x5a, stream);
  const BenchResult r = bench_device(
      [&](long) {
        CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream));
      },
      2 * bytes, stream, config);
  return r.gbps();
}

}  // namespace lab
