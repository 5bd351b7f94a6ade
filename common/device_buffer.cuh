// Device memory that frees itself. Move-only, so a buffer has one owner.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "cuda_check.cuh"

namespace lab {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMalloc(&ptr_, count_ * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // Destructors must not throw; a failed free leaks.
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer(std::move(other)).swap(*this);
    return *this;
  }

  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  // Fills every byte with `value`: how tests poison outputs and workspaces.
  void fill_bytes(unsigned char value, cudaStream_t stream = nullptr) {
    if (count_ > 0) CUDA_CHECK(cudaMemsetAsync(ptr_, value, bytes(), stream));
  }

 private:
  void swap(DeviceBuffer& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(count_, other.count_);
  }
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace lab
