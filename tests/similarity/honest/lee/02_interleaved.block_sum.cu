  // one value per thread, zero when we run off the end
  __shared__ int smem[kThreads];
  std::size_t idx = (std::size_t)blockIdx.x * blockDim.x + threadIdx.x;
  int mine = 0;
  if (idx < n) mine = in[idx];
  smem[threadIdx.x] = mine;
  __syncthreads();

  int step = 1;
  while (step < (int)kThreads) {
    int pos = threadIdx.x;
    if (pos % (step * 2) == 0)
      smem[pos] += smem[pos + step];
    step *= 2;
    __syncthreads();
  }

  if (threadIdx.x == 0)
    block_sums[blockIdx.x] = smem[0];
