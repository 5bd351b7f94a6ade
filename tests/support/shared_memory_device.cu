// Device arenas: each one allocation of the driver's virtual memory API,
// exported as a file descriptor that the runner maps (vmm.hpp).
#include <cuda_runtime.h>

#include <map>

#include "shared_memory.hpp"
#include "vmm.hpp"

namespace lab::test {
namespace {
std::map<void*, vmm::Mapping>& mappings() {
  static std::map<void*, vmm::Mapping> m;
  return m;
}
}  // namespace

void* device_allocate(std::size_t* bytes, int* fd, int device, std::uint32_t access) {
  const vmm::Mapping m = vmm::allocate(*bytes, fd, device, access);
  *bytes = m.bytes;
  mappings()[m.pointer] = m;
  return m.pointer;
}

std::size_t device_rounded(std::size_t bytes, int device) { return vmm::rounded(bytes, device); }

bool device_synchronize() { return cudaDeviceSynchronize() == cudaSuccess; }

int device_ordinal(int device) {
  if (device >= 0) return device;
  int current = 0;
  return cudaGetDevice(&current) == cudaSuccess ? current : -1;
}

void device_free(void* pointer) {
  const auto it = mappings().find(pointer);
  if (it == mappings().end()) return;
  vmm::release(it->second);
  mappings().erase(it);
}

int device_pool_fd() { return -1; }  // no pool: every allocation has its own descriptor

}  // namespace lab::test
