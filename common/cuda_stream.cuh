// A stream that destroys itself; non-blocking, so it never waits on the legacy
// default stream and two of them really can run side by side.
#pragma once

#include <cuda_runtime.h>

#include "cuda_check.cuh"

namespace lab {

class CudaStream {
 public:
  CudaStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  operator cudaStream_t() const { return stream_; }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace lab
