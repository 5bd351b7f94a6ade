  // -inf is the identity: every float beats it, NaN handled by max_op
  __shared__ float smem[kThreads];
  float top = -INFINITY;
  for (std::size_t idx = (std::size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n;
       idx += (std::size_t)blockDim.x * gridDim.x)
    top = lab::max_op(top, in[idx]);
  smem[threadIdx.x] = top;
  __syncthreads();

  int active = blockDim.x / 2;
  while (active > 0) {
    if ((int)threadIdx.x < active)
      smem[threadIdx.x] = lab::max_op(smem[threadIdx.x], smem[threadIdx.x + active]);
    __syncthreads();
    active /= 2;
  }

  if (threadIdx.x == 0)
    block_maxes[blockIdx.x] = smem[0];
