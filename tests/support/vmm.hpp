// Device memory both processes map: one allocation of the CUDA driver's
// virtual memory API, exported as a POSIX file descriptor that travels over
// the runner's socket (it crosses PID namespaces and sandboxes). A memory
// pool's own export does the same for small allocations, but its importer
// crashes for allocations of several GB, and the 2^32-element test needs
// 17 GB (docs/decisions.md, "Device memory shared through the driver's VMM API").
#pragma once

#include <cstddef>
#include <cstdint>

namespace lab::vmm {

struct Mapping {
  void* pointer = nullptr;
  std::size_t bytes = 0;  // rounded up to the allocation granularity
  std::uint64_t handle = 0;
  std::uint32_t access = 0;  // the devices that may use it (a bit each)
};

// Who may read and write a mapping: a bit per CUDA ordinal. Access is a
// property of each process's mapping, so the checker and the runner each grant
// it to every GPU of a call that spans several (lab 12). 0: the current device.
using AccessMask = std::uint32_t;

// What an allocation on `device` (-1: the current one) of `bytes` is rounded
// up to: the driver's minimum granularity (2 MiB on an H100 or H200).
std::size_t rounded(std::size_t bytes, int device = -1);

// The checker: a new allocation of at least `bytes` on `device` (-1: the
// current one), mapped here with access for `access` and `device`; *fd
// receives its shareable handle.
Mapping allocate(std::size_t bytes, int* fd, int device = -1, AccessMask access = 0);
// The runner: the allocation behind fd, `bytes` long, mapped here with access
// for `access`.
Mapping import(int fd, std::size_t bytes, AccessMask access = 0);
// Either side: wait for every device with access to it, unmap, and release
// this process's reference.
void release(const Mapping& m);

}  // namespace lab::vmm
