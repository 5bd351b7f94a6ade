// What differs between a GPU runner and lab 01's CPU-only runner: device
// memory imported from the checker's pool, streams, and what "finished" means.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace lab::runner {

// Creates the CUDA context (GPU) so that the first timed call does not pay for it.
void prepare();

// The checker's device memory pool, where it uses one (kMapPool).
void import_pool(int fd);
// One device allocation of the checker's, from its file descriptor (vmm.hpp),
// `bytes` long, usable by the devices of `access` (a bit each; 0: the current
// one); and its release.
void* import_device(int fd, std::uint64_t bytes, std::uint32_t access);
void release_device(void* pointer);

// The stream a call with this index runs on, on `device` (nullptr for lab
// 01): one per device and index, made the first time it is asked for.
void* stream(std::uint32_t index, std::uint32_t device);

// After a batch of calls: waits for every device it used. Returns "" when all went well,
// else why not; *todo is set when a LAB_TODO() ran, *lost when the CUDA
// context is gone (the runner must exit after replying).
std::string finish(bool* todo, bool* lost);

// A lab::CudaError (CUDA_CHECK in the lab's code), reported as a CUDA error.
bool is_cuda_error(const std::exception& e);

}  // namespace lab::runner
