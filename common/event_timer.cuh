// The one timer for GPU work: a pair of CUDA events on a stream. Host clocks
// would time the launch, not the kernel, since launches return at once.
#pragma once

#include <cuda_runtime.h>

#include "cuda_check.cuh"

namespace lab {

class EventTimer {
 public:
  EventTimer() {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(cudaStream_t stream) {
    stream_ = stream;
    CUDA_CHECK(cudaEventRecord(start_, stream));
  }
  // Waits for the work queued since start() and returns its duration.
  float stop_ms() {
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace lab
