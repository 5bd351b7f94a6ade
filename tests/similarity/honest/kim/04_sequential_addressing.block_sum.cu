  __shared__ int buf[kThreads];
  unsigned t = threadIdx.x;
  std::size_t g = blockIdx.x * std::size_t(blockDim.x) + t;
  if (g < n) {
    buf[t] = in[g];
  } else {
    buf[t] = 0;
  }
  __syncthreads();
  for (unsigned half = blockDim.x >> 1; half != 0; half >>= 1) {
    if (t < half) {
      buf[t] = buf[t] + buf[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    block_sums[blockIdx.x] = buf[0];
  }
