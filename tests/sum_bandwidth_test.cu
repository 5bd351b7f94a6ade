// Bandwidth of a GPU int-sum lab as a fraction of a device-to-device copy
// measured in the same process. Input: at least 2^26 elements and 8x the L2,
// rotated over enough copies that no timed call reads from L2. Bytes counted:
// the input, read once. No figure is recorded for a wrong answer.
#include <gtest/gtest.h>

#include <climits>

#include "bandwidth_report.hpp"
#include "bench_device.hpp"
#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "generate.cuh"
#include "int_inputs.hpp"
#include "sum_contract.cuh"
#include "test_env.hpp"

namespace lab::test {
namespace {

TEST(SumBandwidth, FractionOfCopyCeiling) {
  if (perf_disabled()) GTEST_SKIP() << "performance checks are off (LAB_SKIP_PERF is set)";
  const DeviceInfo info = query_device();
  const std::size_t n = bandwidth_test_elements(info, sizeof(int));
  const std::size_t copies = rotation_count(n * sizeof(int), info);
  const std::size_t need = copies * n * sizeof(int) + 2 * copy_ceiling_bytes(info);
  if (need > info.free_mem_bytes) GTEST_SKIP() << "needs " << need << " bytes of GPU memory";

  CudaStream stream;
  const IntInput spec{IntPattern::kRandom, case_seed(n, 0xba), n};
  DeviceBuffer<int> inputs(copies * n);
  for (std::size_t c = 0; c < copies; ++c) generate(inputs.get() + c * n, n, spec, stream);
  DeviceBuffer<unsigned char> workspace(sum_workspace_bytes(n));
  DeviceBuffer<int> out(1);
  const int expected = static_cast<int>(reference_sum(spec));

  auto call = [&](long k) {
    reduce_sum(inputs.get() + static_cast<std::size_t>(k) % copies * n, n, out.get(),
               workspace.get(), stream);
    CUDA_CHECK_LAUNCH();
  };
  auto check = [&](const char* when) {
    stream.synchronize();
    int got = 0;
    CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
    if (lab_todo_reached()) FAIL() << "not implemented: no bandwidth is measured for a skeleton";
    ASSERT_EQ(got, expected) << "wrong sum " << when << " (n=" << n
                             << ", random input): no bandwidth is reported for a wrong answer";
  };
  out.fill_bytes(0xA5, stream);
  call(0);
  ASSERT_NO_FATAL_FAILURE(check("before timing"));

  BandwidthFigures b;
  b.n = n;
  b.ceiling_gbps = copy_ceiling_gbps(copy_ceiling_bytes(info), stream);
  b.result = bench_device(call, n * sizeof(int), stream);
  ASSERT_NO_FATAL_FAILURE(check("after timing"));
  b.theoretical_gbps = info.theoretical_gbps();
  b.device = info.name;
  record_bandwidth(b, true);
}

}  // namespace
}  // namespace lab::test
