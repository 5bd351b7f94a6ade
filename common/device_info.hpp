// What the tests and benchmarks need to know about the GPU they run on.
#pragma once

#include <cstddef>
#include <string>

namespace lab {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_mem_bytes = 0;
  std::size_t free_mem_bytes = 0;
  int mem_clock_khz = 0;
  int bus_width_bits = 0;
  int driver_version = 0;   // cudaDriverGetVersion: 13000 means CUDA 13.0
  int runtime_version = 0;  // cudaRuntimeGetVersion
  // 2 transfers per clock (DDR) x clock x bus width. CUDA 13 removed
  // cudaDeviceProp::memoryClockRate, so this comes from cudaDeviceGetAttribute.
  double theoretical_gbps() const {
    return 2.0 * mem_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
  }
};

// True when a CUDA device can be used; otherwise `why` says in one line why not.
bool cuda_device_available(std::string* why);

// Makes the current device's context now, where a process would otherwise
// make it in its first CUDA call. Never throws: a failure is left for that
// call to meet and report (false here).
bool make_context();

// Throws lab::CudaError when there is no usable device.
DeviceInfo query_device(int ordinal = 0);

// Multiprocessors of the current device: what grid-stride kernels size their
// grid from (a fixed grid of 32 blocks leaves most of an H200's 132 SMs idle).
int current_sm_count();

}  // namespace lab
