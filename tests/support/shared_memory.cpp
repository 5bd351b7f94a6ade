#include "shared_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace lab::test {
namespace {

std::vector<std::unique_ptr<Arena>>& arenas() {
  static std::vector<std::unique_ptr<Arena>> all;
  return all;
}
ArenaListener& listener() {
  static ArenaListener l;
  return l;
}
std::uint32_t g_next_id = 1;

void* host_allocate(std::size_t bytes, int* fd) {
  *fd = memfd_create("lab-shared", MFD_CLOEXEC);
  if (*fd < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  if (ftruncate(*fd, static_cast<off_t>(bytes)) != 0) {
    close(*fd);
    throw std::runtime_error(std::string("ftruncate of shared memory: ") + std::strerror(errno));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (p == MAP_FAILED) {
    close(*fd);
    throw std::runtime_error(std::string("mmap of shared memory: ") + std::strerror(errno));
  }
  return p;
}

}  // namespace

Arena* create_arena(wire::Memory memory, std::size_t bytes, int device, std::uint32_t access) {
  auto arena = std::make_unique<Arena>();
  arena->id = g_next_id++;
  arena->memory = memory;
  arena->bytes = std::max<std::size_t>(bytes, 1);
  arena->device = device;
  arena->access = access;
  arena->base = memory == wire::Memory::kHost
                    ? host_allocate(arena->bytes, &arena->fd)
                    : device_allocate(&arena->bytes, &arena->fd, device, access);
  Arena* raw = arena.get();
  arenas().push_back(std::move(arena));
  if (listener().created) listener().created(*raw);
  return raw;
}

void release_arena(Arena* arena) {
  if (arena == nullptr) return;
  if (listener().released) listener().released(*arena);
  if (arena->memory == wire::Memory::kHost) munmap(arena->base, arena->bytes);
  else device_free(arena->base);
  close(arena->fd);
  auto& all = arenas();
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const std::unique_ptr<Arena>& a) { return a.get() == arena; }),
            all.end());
}

std::vector<const Arena*> live_arenas() {
  std::vector<const Arena*> out;
  for (const auto& a : arenas()) out.push_back(a.get());
  return out;
}

wire::Ref to_ref(const void* p) {
  wire::Ref ref;
  if (p == nullptr) return ref;
  const auto* at = static_cast<const unsigned char*>(p);
  // Inside an arena first: allocations can be adjacent in this process's
  // address space, and the start of one is then one past the end of another
  // (which the runner maps elsewhere).
  for (const bool end_too : {false, true}) {
    for (const auto& a : arenas()) {
      const auto* base = static_cast<const unsigned char*>(a->base);
      if (at >= base && (at < base + a->bytes || (end_too && at == base + a->bytes))) {
        ref.arena = a->id;
        ref.offset = static_cast<std::uint64_t>(at - base);
        return ref;
      }
    }
  }
  throw std::logic_error("test bug: a buffer given to the lab's code is not shared memory");
}

void set_arena_listener(ArenaListener l) { listener() = std::move(l); }

}  // namespace lab::test
