#include "cuda_health.hpp"

#include <cuda_runtime.h>

namespace lab::test {

std::string lost_cuda_context() {
  if (cudaDeviceSynchronize() == cudaSuccess) return {};
  cudaGetLastError();  // Clears an ordinary error; a sticky one stays.
  const cudaError_t again = cudaDeviceSynchronize();
  if (again == cudaSuccess) return {};
  return std::string("the CUDA context is lost (") + cudaGetErrorName(again) + ": " +
         cudaGetErrorString(again) + "); the remaining tests need a fresh process";
}

}  // namespace lab::test
