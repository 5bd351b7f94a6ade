// The GPU side of a runner: the checker's memory, imported from its pool, and
// two non-blocking streams (the two-streams test runs calls on both).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda_check.cuh"
#include "cuda_health.hpp"
#include "direct_calls.hpp"
#include "runner_platform.hpp"

namespace lab::runner {
namespace {
cudaMemPool_t g_pool = nullptr;
cudaStream_t g_streams[2] = {nullptr, nullptr};
bool g_used[2] = {false, false};
}  // namespace

void prepare() {
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaFree(nullptr));
}

void import_pool(int fd) {
  CUDA_CHECK(cudaMemPoolImportFromShareableHandle(
      &g_pool, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
      cudaMemHandleTypePosixFileDescriptor, 0));
}

void* import_device(const unsigned char* export_data) {
  if (g_pool == nullptr) throw std::invalid_argument("no memory pool was imported");
  cudaMemPoolPtrExportData data;
  std::memcpy(&data, export_data, sizeof data);
  void* pointer = nullptr;
  CUDA_CHECK(cudaMemPoolImportPointer(&pointer, g_pool, &data));
  return pointer;
}

void release_device(void* pointer) {
  // Imported memory is freed here before the checker frees it (the CUDA rule).
  CUDA_CHECK(cudaFree(pointer));
}

void* stream(std::uint32_t index) {
  if (index > 1) throw std::invalid_argument("stream index out of range");
  if (g_streams[index] == nullptr)
    CUDA_CHECK(cudaStreamCreateWithFlags(&g_streams[index], cudaStreamNonBlocking));
  g_used[index] = true;
  return g_streams[index];
}

bool is_cuda_error(const std::exception& e) {
  return dynamic_cast<const lab::CudaError*>(&e) != nullptr;
}

std::string finish(bool* todo, bool* lost) {
  *todo = *lost = false;
  std::string why;
  for (int s = 0; s < 2; ++s) {
    if (!g_used[s]) continue;
    g_used[s] = false;
    const cudaError_t status = cudaStreamSynchronize(g_streams[s]);
    if (status != cudaSuccess && why.empty())
      why = std::string("after the calls: ") + cudaGetErrorName(status) + ": " +
            cudaGetErrorString(status);
  }
  const std::string gone = lab::test::lost_cuda_context();
  if (!gone.empty()) {
    *lost = true;
    return gone;
  }
  if (!why.empty()) return why;
  *todo = lab::test::direct::todo_reached();
  return {};
}

}  // namespace lab::runner
