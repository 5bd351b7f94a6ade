// One way to check CUDA: every runtime call and every kernel launch goes through
// CUDA_CHECK or CUDA_CHECK_LAUNCH, and a failure becomes a lab::CudaError that
// names the file, the line, the call and the runtime's own error string.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace lab {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, const char* file,
                                          int line) {
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                            cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

}  // namespace lab

#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    const cudaError_t lab_cuda_status_ = (call);                            \
    if (lab_cuda_status_ != cudaSuccess)                                    \
      ::lab::throw_cuda_error(lab_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After every <<<...>>>: a bad launch configuration is reported here, at the
// launch, rather than as a puzzling error from some later call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
