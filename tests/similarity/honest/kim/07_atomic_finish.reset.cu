  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), stream));
