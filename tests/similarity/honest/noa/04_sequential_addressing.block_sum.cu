  __shared__ int cache[kThreads];
  std::size_t base = std::size_t{blockDim.x} * blockIdx.x;
  unsigned me = threadIdx.x;
  cache[me] = base + me < n ? in[base + me] : 0;
  unsigned live = kThreads;
  do {
    __syncthreads();
    live = live / 2;
    if (me < live) cache[me] = cache[me] + cache[me + live];
  } while (live > 1);
  __syncthreads();
  if (me == 0) block_sums[blockIdx.x] = cache[0];
