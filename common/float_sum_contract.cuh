// The contract of lab 11 (accurate float sums): one entry point, four methods.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

enum class FloatSumMethod : int {
  kNaive = 0,     // a float register per thread, then a float tree
  kPairwise = 1,  // one element per thread and a float tree: pairwise summation
  kKahan = 2,     // compensated (Kahan) per thread, compensated tree
  kDouble = 3,    // double per thread and through the tree, rounded once at the end
};

inline const char* method_name(FloatSumMethod m) {
  switch (m) {
    case FloatSumMethod::kNaive: return "naive";
    case FloatSumMethod::kPairwise: return "pairwise";
    case FloatSumMethod::kKahan: return "kahan";
    case FloatSumMethod::kDouble: return "double";
  }
  return "?";
}

// Bytes of scratch device memory reduce_sum_float needs for n inputs, kept
// between calls as sum_contract.cuh says.
std::size_t float_sum_workspace_bytes(std::size_t n);

// Writes the sum of in[0, n) to *out, computed by `method`; asynchronous on
// `stream`. n == 0 writes 0.
void reduce_sum_float(const float* in, std::size_t n, float* out, void* workspace,
                      FloatSumMethod method, cudaStream_t stream);

// The device address of an int that a kernel still containing the skeleton's
// LAB_TODO() sets to 1 (lab_fence.cuh).
void* lab_todo_flag_address();
