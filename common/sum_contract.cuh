// The contract every GPU int-sum lab implements; the tests and benchmarks are
// written against these three functions only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// Bytes of scratch device memory reduce_sum needs for n inputs (may be 0).
std::size_t sum_workspace_bytes(std::size_t n);

// Writes the sum of in[0, n) to *out. Asynchronous: everything is queued on
// `stream`, nothing waits for the GPU. `workspace` holds sum_workspace_bytes(n)
// bytes whose contents are undefined on entry. n == 0 writes 0, the identity.
// Inputs are bounded so that the sum fits in int (see int_inputs.hpp).
void reduce_sum(const int* in, std::size_t n, int* out, void* workspace, cudaStream_t stream);

// The device address of an int that a kernel still containing the skeleton's
// LAB_TODO() sets to 1 (lab_fence.cuh).
void* lab_todo_flag_address();
