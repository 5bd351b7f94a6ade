  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(*out), stream));
