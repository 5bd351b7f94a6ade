#include <cstdio>

#include "bench_device.hpp"
#include "cuda_stream.cuh"
#include "device_info.hpp"
#include "measure_ceiling.hpp"
#include "result_stream.hpp"

namespace lab::test {

std::string measure_ceiling_json() {
  const DeviceInfo info = query_device();
  CudaStream stream;
  const double gbps = copy_ceiling_gbps(copy_ceiling_bytes(info), stream);
  char buf[256];
  std::snprintf(buf, sizeof buf, "{\"ceiling_gbps\": %.1f, \"theoretical_gbps\": %.1f, ", gbps,
                info.theoretical_gbps());
  return buf + std::string("\"device\": ") + json_string(info.name) + "}";
}

}  // namespace lab::test
