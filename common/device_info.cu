#include "cuda_check.cuh"
#include "device_info.hpp"

namespace lab {

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // Not sticky, but leave no error behind for later checks.
    if (why) *why = std::string("no usable CUDA GPU: ") + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    if (why) *why = "no usable CUDA GPU: the driver reports 0 devices";
    return false;
  }
  return true;
}

bool make_context() {
  const bool made = cudaFree(nullptr) == cudaSuccess;
  cudaGetLastError();  // the next call meets the failure again and reports it
  return made;
}

DeviceInfo query_device(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  info.global_mem_bytes = prop.totalGlobalMem;
  CUDA_CHECK(cudaDeviceGetAttribute(&info.mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  CUDA_CHECK(
      cudaDeviceGetAttribute(&info.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal));
  CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  std::size_t total = 0;
  CUDA_CHECK(cudaSetDevice(ordinal));
  CUDA_CHECK(cudaMemGetInfo(&info.free_mem_bytes, &total));
  return info;
}

int current_sm_count() {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace lab
