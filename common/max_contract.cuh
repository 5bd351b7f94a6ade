// The contract every GPU float-max lab implements (lab 08, lab 09's float form).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// Bytes of scratch device memory reduce_max needs for n inputs (may be 0),
// kept between calls as sum_contract.cuh says.
std::size_t max_workspace_bytes(std::size_t n);

// Writes the maximum of in[0, n) to *out, as lab::max_op (max_op.hpp) defines
// it: NaN anywhere gives NaN, +0.0 is above -0.0. Asynchronous on `stream`.
// n == 0 writes -inf, the identity of max.
void reduce_max(const float* in, std::size_t n, float* out, void* workspace, cudaStream_t stream);

// The device address of an int that a kernel still containing the skeleton's
// LAB_TODO() sets to 1 (lab_fence.cuh).
void* lab_todo_flag_address();
