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

// Released device arenas, oldest first, kept for the next request of the same
// size. A new arena costs the driver about a millisecond here and as much in
// the runner (create, export, map; import, map), and its release a device-wide
// synchronisation and an unmap on each side; the driver serves these calls one
// at a time across the machine. A case makes three (its input between guard
// bands, its output, its workspace), nearly all of them one 2 MiB granule, so
// spares halve a small case's time (docs/decisions.md, "Spare arenas"). A
// spare shows the runner nothing it could not see before: what the
// checker wrote there for an earlier case, which the next owner overwrites
// (inputs generated, outputs poisoned, workspaces zeroed) before any call.
// Only arenas no other GPU reaches (access 0) are kept: see release_arena.
struct Spare {
  Arena* arena;
  int ordinal;  // the GPU it lives on: an arena made for "the current one" keeps its own
};
std::vector<Spare>& spares() {
  static std::vector<Spare> kept;
  return kept;
}

std::size_t g_spare_bytes = 0;

// Unmaps the arena in the runner and here, and forgets it.
void free_arena(Arena* arena) {
  if (listener().released) listener().released(*arena);
  if (arena->memory == wire::Memory::kHost) munmap(arena->base, arena->bytes);
  else device_free(arena->base);
  close(arena->fd);
  auto& all = arenas();
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const std::unique_ptr<Arena>& a) { return a.get() == arena; }),
            all.end());
}

Arena* take_spare(std::size_t bytes, int device) {
  auto& kept = spares();
  const int ordinal = device_ordinal(device);
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    Arena* a = it->arena;
    if (a->bytes != bytes || a->device != device || it->ordinal != ordinal) continue;
    kept.erase(it);
    g_spare_bytes -= a->bytes;
    return a;
  }
  return nullptr;
}

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
  if (memory == wire::Memory::kDevice && access == 0 && !spares().empty()) {
    const std::size_t rounded = device_rounded(std::max<std::size_t>(bytes, 1), device);
    if (Arena* spare = take_spare(rounded, device)) return spare;
  }
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
  // One GPU's memory only: an arena other GPUs reach (lab 12) may still be in
  // use by their work, which only its unmap waits for (vmm::release).
  if (arena->memory != wire::Memory::kDevice || arena->bytes > kMaxSpareBytes || arena->access != 0)
    return free_arena(arena);
  // What the checker queued on it ends before anyone else writes there: the
  // synchronisation its unmap would have made.
  if (!device_synchronize()) return free_arena(arena);
  spares().push_back({arena, device_ordinal(arena->device)});
  g_spare_bytes += arena->bytes;
  while (g_spare_bytes > kMaxSpareTotal) {
    Arena* oldest = spares().front().arena;
    spares().erase(spares().begin());
    g_spare_bytes -= oldest->bytes;
    free_arena(oldest);
  }
}

void release_all_arenas() {
  spares().clear();
  g_spare_bytes = 0;
  while (!arenas().empty()) free_arena(arenas().back().get());
}

std::size_t spare_count() { return spares().size(); }
std::size_t spare_bytes() { return g_spare_bytes; }

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
