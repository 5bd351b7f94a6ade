// Memory the checker owns and lends to its runner: host memory (a memfd that
// both processes map) for lab 01, device memory exported as a file descriptor
// (the driver's virtual memory API, vmm.hpp) for the GPU labs.
// The checker generates inputs, poisons outputs and reads results here with
// its own code; the runner only gets to run the lab's functions on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "wire.hpp"

namespace lab::test {

struct Arena {
  std::uint32_t id = 0;
  wire::Memory memory = wire::Memory::kHost;
  void* base = nullptr;  // the checker's own mapping
  std::size_t bytes = 0;
  int fd = -1;      // the memfd or the device allocation's handle, kept for a restarted runner
  int device = -1;  // device memory: the GPU it lives on (-1: the current one)
  std::uint32_t access = 0;  // device memory: the GPUs (a bit each) that may read and write it
  unsigned char export_data[64] = {};  // unused: kept for the wire's layout
};

// Device memory lives on `device` (-1: the current one) and every GPU of the
// `access` mask (a bit each; its own is always included) may read and write it,
// in the checker and in the runner alike: access is granted per mapping.
// A released device arena of up to kMaxSpareBytes that no other GPU reaches
// (access 0) is kept as a spare, still mapped here and in the runner, and
// handed out again by the next create_arena of the same rounded size and
// device (shared_memory.cpp says why).
Arena* create_arena(wire::Memory memory, std::size_t bytes, int device = -1,
                    std::uint32_t access = 0);
void release_arena(Arena* arena);
inline constexpr std::size_t kMaxSpareBytes = std::size_t{64} << 20;
inline constexpr std::size_t kMaxSpareTotal = std::size_t{256} << 20;
// Frees every arena, spares included, once a run has ended (its runner
// stopped): a checker that serves the next run (checker_serve.hpp) shows it
// none of this run's memory, and no process that outlived a runner keeps a
// mapping of memory a later run uses.
void release_all_arenas();
// The spares kept now: their count and bytes (tests of the cache).
std::size_t spare_count();
std::size_t spare_bytes();

// Every live arena, oldest first: a new runner is given each of them.
std::vector<const Arena*> live_arenas();

// Where p lies: its arena and offset (p may point one past the end). Throws
// std::logic_error for memory that is not shared: a test bug.
wire::Ref to_ref(const void* p);

// The runner link listens: it maps an arena into the runner when it is made
// and unmaps it there before it is freed.
struct ArenaListener {
  std::function<void(const Arena&)> created;
  std::function<void(const Arena&)> released;
};
void set_arena_listener(ArenaListener listener);

// Device memory (shared_memory_device.cu in GPU checkers; lab 01's checker
// has none and says so). *bytes is rounded up to what was allocated; *fd is
// the allocation's shareable handle; device and access as for create_arena.
void* device_allocate(std::size_t* bytes, int* fd, int device, std::uint32_t access);
// What device_allocate rounds `bytes` up to on `device` (-1: the current one).
std::size_t device_rounded(std::size_t bytes, int device);
// Waits for the checker's queued GPU work; false if the GPU reports an error.
bool device_synchronize();
// `device`, or the current GPU's ordinal for -1.
int device_ordinal(int device);
void device_free(void* pointer);
// A memory pool's descriptor, where the device memory comes from one (-1: none).
int device_pool_fd();

}  // namespace lab::test
