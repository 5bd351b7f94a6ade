  const int zero_bytes = 0;
  CUDA_CHECK(cudaMemsetAsync(out, zero_bytes, sizeof(int), stream));
