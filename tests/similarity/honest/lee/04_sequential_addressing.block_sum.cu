  // sequential addressing: the active threads stay packed at the front
  __shared__ int smem[kThreads];
  std::size_t idx = (std::size_t)blockIdx.x * blockDim.x + threadIdx.x;
  int mine = 0;
  if (idx < n) mine = in[idx];
  smem[threadIdx.x] = mine;
  __syncthreads();

  int active = blockDim.x / 2;
  while (active > 0) {
    if ((int)threadIdx.x < active)
      smem[threadIdx.x] += smem[threadIdx.x + active];
    __syncthreads();
    active /= 2;
  }

  if (threadIdx.x == 0)
    block_sums[blockIdx.x] = smem[0];
