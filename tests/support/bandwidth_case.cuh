// The bandwidth test of every GPU contract, as a fraction of a device-to-device
// copy measured in the same process. Input: at least 2^26 elements and 8x the
// L2, rotated over enough copies that no timed call reads from L2. Bytes
// counted: the input, read once. No figure is recorded for a wrong answer.
#pragma once

#include <gtest/gtest.h>

#include "bandwidth_report.hpp"
#include "bench_device.hpp"
#include "contracts.cuh"
#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "generate.cuh"
#include "not_implemented.hpp"
#include "test_env.hpp"

namespace lab::test {

template <class C>
void check_bandwidth() {
  using T = typename C::T;
  if (perf_disabled()) GTEST_SKIP() << "performance checks are off (LAB_SKIP_PERF is set)";
  const DeviceInfo info = query_device();
  const std::size_t n = bandwidth_test_elements(info, sizeof(T));
  const std::size_t copies = rotation_count(n * sizeof(T), info);
  const std::size_t need = copies * n * sizeof(T) + 2 * copy_ceiling_bytes(info);
  if (need > info.free_mem_bytes) GTEST_SKIP() << "needs " << need << " bytes of GPU memory";

  CudaStream stream;
  const typename C::Input spec = C::bandwidth_input(case_seed(n, 0xba), n);
  DeviceBuffer<T> inputs(copies * n);
  for (std::size_t c = 0; c < copies; ++c) generate(inputs.get() + c * n, n, spec, stream);
  DeviceBuffer<unsigned char> workspace(C::workspace_bytes(n));
  DeviceBuffer<T> out(1);
  const T expected = C::reference(spec);

  auto call = [&](long k) {
    C::run(inputs.get() + static_cast<std::size_t>(k) % copies * n, n, out.get(),
           workspace.get(), stream);
    CUDA_CHECK_LAUNCH();
  };
  auto check = [&](const char* when) {
    stream.synchronize();
    T got{};
    CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
    if (lab_todo_reached()) FAIL() << "not implemented: no bandwidth is measured for a skeleton";
    ASSERT_TRUE(C::same(got, expected))
        << "wrong " << C::kWhat << " " << when << " (n=" << n << ", random input): expected "
        << C::show(expected) << ", got " << C::show(got)
        << "; no bandwidth is reported for a wrong answer";
  };
  out.fill_bytes(kPoisonBits & 0xff, stream);
  call(0);
  ASSERT_NO_FATAL_FAILURE(check("before timing"));

  BandwidthFigures b;
  b.variant = C::variant();
  b.n = n;
  b.ceiling_gbps = copy_ceiling_gbps(copy_ceiling_bytes(info), stream);
  b.result = bench_device(call, n * sizeof(T), stream);
  ASSERT_NO_FATAL_FAILURE(check("after timing"));
  b.theoretical_gbps = info.theoretical_gbps();
  b.device = info.name;
  record_bandwidth(b, C::kCheckBandwidth);
}

}  // namespace lab::test
