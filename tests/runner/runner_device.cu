// The GPU side of a runner: the checker's memory, imported from its pool or
// its VMM allocations, and non-blocking streams: two per device (the
// two-streams tests run calls on both), on every device a call names (lab 12's
// all-reduce spans them all).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda_check.cuh"
#include "cuda_health.hpp"
#include "direct_calls.hpp"
#include "runner_platform.hpp"
#include "vmm.hpp"

namespace lab::runner {
namespace {
constexpr std::uint32_t kStreamsPerDevice = 2;

cudaMemPool_t g_pool = nullptr;
std::map<void*, vmm::Mapping> g_imports;
std::map<std::pair<std::uint32_t, std::uint32_t>, cudaStream_t> g_streams;  // (device, index)
std::set<std::pair<std::uint32_t, std::uint32_t>> g_used;

int device_count() {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  return count;
}

// Runs `body` with `device` current, and makes device 0 current again: the
// lab's code of the one-GPU contracts runs on the device the runner starts on.
template <class Body>
void on_device(int device, Body&& body) {
  CUDA_CHECK(cudaSetDevice(device));
  try {
    body();
  } catch (...) {
    cudaSetDevice(0);
    throw;
  }
  CUDA_CHECK(cudaSetDevice(0));
}
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

void* import_device(int fd, std::uint64_t bytes, std::uint32_t access) {
  // Memory another GPU may use: that GPU's context first, so that the mapping
  // granted to it is there when the lab's kernels run on it.
  const int count = device_count();
  for (int d = 1; d < 32; ++d) {
    if (!(access >> d & 1)) continue;
    if (d >= count)
      throw std::invalid_argument("a mapping names GPU " + std::to_string(d) + " of " +
                                  std::to_string(count));
    on_device(d, [] {
      lab::test::wait_for_gpu_as_asked();
      CUDA_CHECK(cudaFree(nullptr));
    });
  }
  const vmm::Mapping m = vmm::import(fd, static_cast<std::size_t>(bytes), access);
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

void* stream(std::uint32_t index, std::uint32_t device) {
  if (index >= kStreamsPerDevice) throw std::invalid_argument("stream index out of range");
  if (static_cast<int>(device) >= device_count())
    throw std::invalid_argument("a call names GPU " + std::to_string(device) +
                                ", which this runner does not have");
  const auto key = std::make_pair(device, index);
  cudaStream_t& s = g_streams[key];
  if (s == nullptr)
    on_device(static_cast<int>(device),
              [&] { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); });
  g_used.insert(key);
  return s;
}

bool is_cuda_error(const std::exception& e) {
  return dynamic_cast<const lab::CudaError*>(&e) != nullptr;
}

std::string finish(bool* todo, bool* lost) {
  *todo = *lost = false;
  std::string why;
  // Errors become the reply's message, not exceptions: every device is waited for.
  auto note = [&](cudaError_t status, const char* when) {
    if (status != cudaSuccess && why.empty())
      why = std::string(when) + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
  };
  std::set<std::uint32_t> devices;
  for (const auto& key : g_used) {
    devices.insert(key.first);
    note(cudaSetDevice(static_cast<int>(key.first)), "selecting a device: ");
    note(cudaStreamSynchronize(g_streams[key]), "after the calls: ");
  }
  g_used.clear();
  std::string gone;
  for (const std::uint32_t d : devices) {
    note(cudaSetDevice(static_cast<int>(d)), "selecting a device: ");
    if (gone.empty()) gone = lab::test::lost_cuda_context();
  }
  note(cudaSetDevice(0), "selecting a device: ");
  if (!gone.empty()) {
    *lost = true;
    return gone;
  }
  if (!why.empty()) return why;
  // The lab's LAB_TODO() flag lives on each device its kernels ran on.
  for (const std::uint32_t d : devices) {
    if (*todo) break;
    on_device(static_cast<int>(d), [&] { *todo = lab::test::direct::todo_reached(); });
  }
  return {};
}

}  // namespace lab::runner
