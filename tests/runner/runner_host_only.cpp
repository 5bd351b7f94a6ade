// Lab 01's runner has no GPU: device requests are refused.
#include <stdexcept>

#include "runner_platform.hpp"

namespace lab::runner {

void prepare() {}
void import_pool(int) { throw std::invalid_argument("this runner has no GPU"); }
void* import_device(int, std::uint64_t, std::uint32_t) {
  throw std::invalid_argument("this runner has no GPU");
}
void release_device(void*) {}
void* stream(std::uint32_t, std::uint32_t) { return nullptr; }
bool is_cuda_error(const std::exception&) { return false; }

std::string finish(bool* todo, bool* lost) {
  *todo = *lost = false;
  return {};
}

}  // namespace lab::runner
