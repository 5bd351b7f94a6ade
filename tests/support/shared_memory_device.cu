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

int g_pool_fd = -1;

// The pool, exported at once: an allocation can be exported only from a pool
// that already is (cudaMemPoolExportPointer says "invalid argument" otherwise).
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
    CUDA_CHECK(cudaMemPoolExportToShareableHandle(&g_pool_fd, made,
                                                  cudaMemHandleTypePosixFileDescriptor, 0));
    return made;
  }();
  return p;
}

// Pool memory is mapped in 2 MiB pieces; a whole piece per allocation keeps
// every exported allocation its own (no neighbour shares its mapping).
constexpr std::size_t kGranule = std::size_t{2} << 20;

}  // namespace

void* device_allocate(std::size_t bytes, unsigned char* export_data) {
  void* p = nullptr;
  bytes = (bytes + kGranule - 1) / kGranule * kGranule;
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
  pool();
  return g_pool_fd;
}

}  // namespace lab::test
