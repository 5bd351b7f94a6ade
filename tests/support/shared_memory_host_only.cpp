// Lab 01's checker: no GPU, so no device arenas.
#include <stdexcept>

#include "shared_memory.hpp"

namespace lab::test {

void* device_allocate(std::size_t*, int*, int, std::uint32_t) {
  throw std::logic_error("test bug: a CPU lab's checker asked for device memory");
}
std::size_t device_rounded(std::size_t bytes, int) { return bytes; }
bool device_synchronize() { return true; }
int device_ordinal(int device) { return device; }
void device_free(void*) {}
int device_pool_fd() { return -1; }

}  // namespace lab::test
