// Device memory both processes map: one allocation of the CUDA driver's
// virtual memory API, exported as a POSIX file descriptor that travels over
// the runner's socket (it crosses PID namespaces and sandboxes). A memory
// pool's own export does the same for small allocations, but its importer
// crashes (SIGSEGV) for allocations of 8.6 GB and more on an H200 with driver
// 580 (tests/gpu_runs/h200/ipc-sizes.txt), and the 2^32-element test needs 17 GB.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lab::vmm {

struct Mapping {
  void* pointer = nullptr;
  std::size_t bytes = 0;  // rounded up to the allocation granularity
  std::uint64_t handle = 0;
};

// The checker: a new allocation of at least `bytes` on the current device,
// mapped here; *fd receives its shareable handle.
Mapping allocate(std::size_t bytes, int* fd);
// The runner: the allocation behind fd, `bytes` long, mapped here.
Mapping import(int fd, std::size_t bytes);
// Either side: unmap, and release this process's reference.
void release(const Mapping& m);

}  // namespace lab::vmm
