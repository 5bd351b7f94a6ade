// Device arenas: one CUDA memory pool that can be exported as a POSIX file
// descriptor (the runner imports it once, then each allocation by its
// 64-byte export data). A file descriptor, unlike a legacy cudaIpc handle,
// crosses PID namespaces, so the runner may sit in a sandbox.
#include <cuda_runtime.h>

#include <cstring>

#include "cuda_check.cuh"
#include "shared_memory.hpp"

namespace lab::test {
namespace {

cudaMemPool_t pool() {
  static cudaMemPool_t p = [] {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t made = nullptr;
    CUDA_CHECK(cudaMemPoolCreate(&made, &props));
    return made;
  }();
  return p;
}

}  // namespace

void* device_allocate(std::size_t bytes, unsigned char* export_data) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, pool(), nullptr));
  // The runner must not touch it before the allocation is complete.
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
  cudaMemPoolPtrExportData data;
  CUDA_CHECK(cudaMemPoolExportPointer(&data, p));
  static_assert(sizeof data == 64, "export data is 64 bytes (wire.hpp)");
  std::memcpy(export_data, &data, sizeof data);
  return p;
}

void device_free(void* pointer) {
  // Called from destructors: a failure leaks, it must not throw.
  cudaDeviceSynchronize();
  cudaFreeAsync(pointer, nullptr);
  cudaStreamSynchronize(nullptr);
}

int device_pool_fd() {
  static int fd = [] {
    int exported = -1;
    CUDA_CHECK(cudaMemPoolExportToShareableHandle(&exported, pool(),
                                                  cudaMemHandleTypePosixFileDescriptor, 0));
    return exported;
  }();
  return fd;
}

}  // namespace lab::test
