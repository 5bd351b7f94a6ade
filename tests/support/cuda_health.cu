#include "cuda_health.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

namespace lab::test {

std::string lost_cuda_context() {
  if (cudaDeviceSynchronize() == cudaSuccess) return {};
  cudaGetLastError();  // Clears an ordinary error; a sticky one stays.
  const cudaError_t again = cudaDeviceSynchronize();
  if (again == cudaSuccess) return {};
  return std::string("the CUDA context is lost (") + cudaGetErrorName(again) + ": " +
         cudaGetErrorString(again) + "); the remaining tests need a fresh process";
}

// A process that spins while the GPU serves other processes' contexts keeps a
// core busy for nothing: with four to seven runs sharing one GPU, as many
// cores that builds, policy checks and compute-sanitizer on the same machine
// then lack (docs/decisions.md, "Untimed runs wait for the GPU asleep").
void wait_for_gpu_as_asked() {
  const char* wait = std::getenv("LAB_GPU_WAIT");
  if (wait == nullptr || std::strcmp(wait, "block") != 0) return;
  // A failure here only leaves the default: no test depends on how a wait is made.
  if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) cudaGetLastError();
}

}  // namespace lab::test
