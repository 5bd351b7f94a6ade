// The GPU side of a runner: the checker's memory, imported from its pool, and
// two non-blocking streams (the two-streams test runs calls on both).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "cuda_check.cuh"
#include "cuda_health.hpp"
#include "direct_calls.hpp"
#include "runner_platform.hpp"
#include "vmm.hpp"

namespace lab::runner {
namespace {
cudaMemPool_t g_pool = nullptr;
std::map<void*, vmm::Mapping> g_imports;
cudaStream_t g_streams[2] = {nullptr, nullptr};
bool g_used[2] = {false, false};
}  // namespace

void prepare() {
  CUDA_CHECK(cudaSetDevice(0));
  lab::test::wait_for_gpu_as_asked();  // before the context exists
  CUDA_CHECK(cudaFree(nullptr));
}

void import_pool(int fd) {
  CUDA_CHECK(cudaMemPoolImportFromShareableHandle(
      &g_pool, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
      cudaMemHandleTypePosixFileDescriptor, 0));
}

void* import_device(int fd, std::uint64_t bytes) {
  const vmm::Mapping m = vmm::import(fd, static_cast<std::size_t>(bytes));
  g_imports[m.pointer] = m;
  return m.pointer;
}

void release_device(void* pointer) {
  // Unmapped here before the checker frees it.
  const auto it = g_imports.find(pointer);
  if (it == g_imports.end()) return;
  vmm::release(it->second);
  g_imports.erase(it);
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
