// main() of a test of the harness that needs a GPU: without one, meson
// reports SKIP (exit 77) with the reason, and CI shows it.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace lab::test {

inline int run_gpu_tests(int argc, char** argv, const char* what) {
  ::testing::InitGoogleTest(&argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP %s: no usable NVIDIA GPU here\n", what);
    return 77;  // meson reports SKIP
  }
  return RUN_ALL_TESTS();
}

}  // namespace lab::test
