  __shared__ int buf[kThreads];
  unsigned t = threadIdx.x;
  std::size_t g = blockIdx.x * std::size_t(blockDim.x) + t;
  std::size_t jump = std::size_t(gridDim.x) * blockDim.x;
  int acc = 0;
  while (g < n) {
    acc += in[g];
    g += jump;
  }
  buf[t] = acc;
  __syncthreads();
  for (unsigned half = blockDim.x >> 1; half != 0; half >>= 1) {
    if (t < half) {
      buf[t] = buf[t] + buf[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    atomicAdd(out, buf[0]);
  }
