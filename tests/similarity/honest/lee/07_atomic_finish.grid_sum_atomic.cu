  // every thread keeps a running total in a register first
  __shared__ int smem[kThreads];
  int total = 0;
  for (std::size_t idx = (std::size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n;
       idx += (std::size_t)blockDim.x * gridDim.x)
    total += in[idx];
  smem[threadIdx.x] = total;
  __syncthreads();

  int active = blockDim.x / 2;
  while (active > 0) {
    if ((int)threadIdx.x < active)
      smem[threadIdx.x] += smem[threadIdx.x + active];
    __syncthreads();
    active /= 2;
  }

  // one atomic per block, not per thread
  if (threadIdx.x == 0)
    atomicAdd(out, smem[0]);
