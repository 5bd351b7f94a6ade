// A generated input with guard bands on both sides. A kernel that reads past
// the end (a missing bounds check) or before the start adds guard values to
// its result, which shows up as a tell-tale difference instead of a crash or
// a silent read of whatever memory lies there.
#pragma once

#include <cstddef>

#include "device_shared.cuh"
#include "generate.cuh"

namespace lab::test {

inline constexpr std::size_t kGuardElements = std::size_t{1} << 16;

template <class T, class Input>
class GuardedInput {
 public:
  // `shift` elements more of guard before the input: data() is then 16-byte
  // aligned only for shift 0, which tests vector loads on unaligned starts.
  GuardedInput(const Input& input, std::size_t n, T before, T after, cudaStream_t stream,
               std::size_t shift = 0)
      : input_(input), n_(n), lead_(kGuardElements + shift), before_{before}, after_{after},
        storage_(n + lead_ + kGuardElements) {
    generate(storage_.get(), lead_, before_, stream);
    generate(data(), n_, input_, stream);
    generate(data() + n_, kGuardElements, after_, stream);
  }
  T* data() const { return storage_.get() + lead_; }

  // Adds to *changes, queued on the stream, the elements of the input or its
  // guards that differ from what was generated.
  void queue_changes(unsigned long long* changes, cudaStream_t stream) const {
    queue_count_changes(storage_.get(), lead_, before_, changes, stream);
    queue_count_changes(data(), n_, input_, changes, stream);
    queue_count_changes(data() + n_, kGuardElements, after_, changes, stream);
  }

 private:
  Input input_;
  std::size_t n_;
  std::size_t lead_;
  ConstantInput<T> before_, after_;
  DeviceShared<T> storage_;  // the runner reads it, the checker checks it
};

}  // namespace lab::test
