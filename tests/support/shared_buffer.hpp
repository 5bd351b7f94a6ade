// A typed buffer of shared memory (shared_memory.hpp) that frees itself.
// Move-only, so a buffer has one owner; the runner sees it as long as it lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "shared_memory.hpp"

namespace lab::test {

template <class T>
class SharedBuffer {
 public:
  SharedBuffer() = default;
  SharedBuffer(wire::Memory memory, std::size_t count, int device = -1, std::uint32_t access = 0)
      : arena_(create_arena(memory, count * sizeof(T), device, access)), count_(count) {}
  ~SharedBuffer() { release_arena(arena_); }
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  SharedBuffer(SharedBuffer&& other) noexcept { swap(other); }
  SharedBuffer& operator=(SharedBuffer&& other) noexcept {
    SharedBuffer(std::move(other)).swap(*this);
    return *this;
  }

  T* get() const { return arena_ ? static_cast<T*>(arena_->base) : nullptr; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  void swap(SharedBuffer& other) noexcept {
    std::swap(arena_, other.arena_);
    std::swap(count_, other.count_);
  }
  Arena* arena_ = nullptr;
  std::size_t count_ = 0;
};

template <class T>
struct HostShared : SharedBuffer<T> {
  explicit HostShared(std::size_t count) : SharedBuffer<T>(wire::Memory::kHost, count) {}
};

}  // namespace lab::test
