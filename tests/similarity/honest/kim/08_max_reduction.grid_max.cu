  __shared__ float buf[kThreads];
  unsigned t = threadIdx.x;
  std::size_t g = blockIdx.x * std::size_t(blockDim.x) + t;
  std::size_t jump = std::size_t(gridDim.x) * blockDim.x;
  float best = -INFINITY;
  while (g < n) {
    best = lab::max_op(best, in[g]);
    g += jump;
  }
  buf[t] = best;
  __syncthreads();
  for (unsigned half = blockDim.x >> 1; half != 0; half >>= 1) {
    if (t < half) {
      buf[t] = lab::max_op(buf[t], buf[t + half]);
    }
    __syncthreads();
  }
  if (t == 0) {
    block_maxes[blockIdx.x] = buf[0];
  }
