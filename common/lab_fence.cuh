// Support for the fenced student region of a GPU lab. Include it from exactly
// one .cu file per lab (it defines the lab's lab_todo_flag_address()).
//
// A kernel cannot throw, so LAB_TODO() raises a flag in device memory instead;
// the runner reads it after every call and reports "not implemented" rather
// than a wrong sum. The read happens in the runner's own code, not here, so a
// lab file needs no host copy at all (the policy check forbids new ones).
#pragma once

#include <cuda_runtime.h>

#include "cuda_check.cuh"
#include "not_implemented.hpp"

namespace {
__device__ int lab_todo_flag = 0;
}  // namespace

// In a fenced kernel: delete this line once the kernel does its job.
#define LAB_TODO() (void)(lab_todo_flag = 1)

// Where this lab's LAB_TODO() flag lives on the device (an int, 0 until a
// kernel still holding a LAB_TODO() runs).
void* lab_todo_flag_address() {
  void* address = nullptr;
  CUDA_CHECK(cudaGetSymbolAddress(&address, lab_todo_flag));
  return address;
}
