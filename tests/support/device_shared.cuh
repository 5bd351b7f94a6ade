// Device memory the runner can reach: what every GPU test hands to the lab's
// code (inputs, outputs, workspaces). Checker-private scratch stays a
// lab::DeviceBuffer.
#pragma once

#include <cuda_runtime.h>

#include "cuda_check.cuh"
#include "shared_buffer.hpp"

namespace lab::test {

template <class T>
class DeviceShared : public SharedBuffer<T> {
 public:
  DeviceShared() = default;
  explicit DeviceShared(std::size_t count) : SharedBuffer<T>(wire::Memory::kDevice, count) {}
  // On GPU `device`, readable and writable by every GPU of `access` (a bit each).
  DeviceShared(std::size_t count, int device, std::uint32_t access)
      : SharedBuffer<T>(wire::Memory::kDevice, count, device, access) {}

  // Fills every byte with `value`: how tests poison outputs and workspaces.
  void fill_bytes(unsigned char value, cudaStream_t stream) {
    if (this->bytes() > 0) CUDA_CHECK(cudaMemsetAsync(this->get(), value, this->bytes(), stream));
  }
};

}  // namespace lab::test
