// The contract every GPU int-sum lab implements; the tests and benchmarks are
// written against these three functions only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// Bytes of scratch device memory reduce_sum needs for n inputs (may be 0).
//
// The workspace rule, the same for every contract: the caller zeroes the
// workspace once, when it allocates it, and then passes it unchanged to each
// call with that n; a call finds it as the previous call left it. So a lab may
// keep a counter there that its last block puts back to zero, and finish in
// one launch with no cudaMemsetAsync first (lab 09: a memset costs about
// 0.7 us on an H200, a fifth of a whole call at 2^16 elements). A lab that
// writes partial results there and reads them back in the same call never
// notices the rule. One workspace serves one call at a time.
std::size_t sum_workspace_bytes(std::size_t n);

// Writes the sum of in[0, n) to *out. Asynchronous: everything is queued on
// `stream`, nothing waits for the GPU. `workspace` holds sum_workspace_bytes(n)
// bytes, kept between calls (above). n == 0 writes 0, the identity.
// Inputs are bounded so that the sum fits in int (see int_inputs.hpp).
void reduce_sum(const int* in, std::size_t n, int* out, void* workspace, cudaStream_t stream);

// The device address of an int that a kernel still containing the skeleton's
// LAB_TODO() sets to 1 (lab_fence.cuh).
void* lab_todo_flag_address();
