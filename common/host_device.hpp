// Lets one function body serve the CPU reference and the GPU input generator.
#pragma once

#ifdef __CUDACC__
#define LAB_HOST_DEVICE __host__ __device__
#else
#define LAB_HOST_DEVICE
#endif
