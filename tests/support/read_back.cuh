// A case's small reads and writes of device memory, queued on its stream and
// waited for once. While other processes' contexts share the GPU each round
// trip (a kernel, a 4-byte read back) waits for the GPU to switch back, some
// twenty times its cost alone (docs/decisions.md, "A case's small reads and
// writes queued, waited for once").
// A case read each call's result, wrote its planted element and checked its
// input in 17 round trips; queued this way it makes 9, four of them the lab's.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <stdexcept>

#include "cuda_check.cuh"

namespace lab::test {

namespace detail {

inline constexpr std::size_t kPinnedBytes = 4096;

// Page-locked host memory the GPU copies results into (a copy into pageable
// memory waits for the stream), allocated once and kept for the process's life.
inline unsigned char* pinned_page() {
  static unsigned char* page = [] {
    void* p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, kPinnedBytes, cudaHostAllocDefault));
    return static_cast<unsigned char*>(p);
  }();
  return page;
}
inline std::size_t& pinned_used() {
  static std::size_t used = 0;
  return used;
}

template <class T>
__global__ void write_element(T* at, T value) {
  *at = value;
}

}  // namespace detail

// Copies queued now, their values valid after wait(). Batches nest (each takes
// the page's next bytes and gives them back when it ends); the checker runs
// one test at a time, on one thread.
class ReadBack {
 public:
  explicit ReadBack(cudaStream_t stream) : stream_(stream), start_(detail::pinned_used()) {}
  ~ReadBack() { detail::pinned_used() = start_; }
  ReadBack(const ReadBack&) = delete;
  ReadBack& operator=(const ReadBack&) = delete;

  template <class T>
  const T* copy(const T* device) {
    std::size_t& used = detail::pinned_used();
    used = (used + alignof(T) - 1) / alignof(T) * alignof(T);
    if (used + sizeof(T) > detail::kPinnedBytes)
      throw std::logic_error("test bug: more read back at once than the pinned page holds");
    T* host = reinterpret_cast<T*>(detail::pinned_page() + used);
    used += sizeof(T);
    CUDA_CHECK(cudaMemcpyAsync(host, device, sizeof(T), cudaMemcpyDeviceToHost, stream_));
    return host;
  }
  void wait() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_;
  std::size_t start_;
};

// *at = value, queued on the stream (the value travels as the kernel's argument).
template <class T>
void write_element(T* at, T value, cudaStream_t stream) {
  detail::write_element<<<1, 1, 0, stream>>>(at, value);
  CUDA_CHECK_LAUNCH();
}

// A counter of the checker's own on the current GPU, for queued counts; one a
// process, kept for its life.
inline unsigned long long* change_counter() {
  static std::map<int, unsigned long long*> counters;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  unsigned long long*& c = counters[device];
  if (c == nullptr) CUDA_CHECK(cudaMalloc(&c, sizeof *c));
  return c;
}

}  // namespace lab::test
