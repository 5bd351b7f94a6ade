// After a kernel faults (illegal address, trap) the CUDA context is lost and
// every later call fails. This tells a lost context from an ordinary error.
#pragma once

#include <string>

namespace lab::test {

// Empty when the context still works; otherwise why it does not.
std::string lost_cuda_context();

}  // namespace lab::test
