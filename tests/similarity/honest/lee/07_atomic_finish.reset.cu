  // zero the result on the caller's stream before the kernel runs
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof *out, stream));
