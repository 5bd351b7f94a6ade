  __shared__ int buf[kThreads];
  unsigned t = threadIdx.x;
  std::size_t g = blockIdx.x * std::size_t(blockDim.x) + t;
  if (g < n) {
    buf[t] = in[g];
  } else {
    buf[t] = 0;
  }
  __syncthreads();
  for (unsigned width = 1; width < kThreads; width <<= 1) {
    if ((t & (2 * width - 1)) == 0) {
      buf[t] = buf[t] + buf[t + width];
    }
    __syncthreads();
  }
  if (t == 0) {
    block_sums[blockIdx.x] = buf[0];
  }
