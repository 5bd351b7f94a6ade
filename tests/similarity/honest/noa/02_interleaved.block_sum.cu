  extern __shared__ int scratch[];
  __shared__ int cache[kThreads];
  (void)scratch;
  std::size_t base = std::size_t{blockDim.x} * blockIdx.x;
  unsigned me = threadIdx.x;
  int value = base + me < n ? in[base + me] : 0;
  cache[me] = value;
  for (unsigned gap = 1; gap < kThreads; gap = gap * 2) {
    __syncthreads();
    unsigned pair = 2 * gap;
    if (me % pair == 0 && me + gap < kThreads) cache[me] = cache[me] + cache[me + gap];
  }
  __syncthreads();
  if (me == 0) block_sums[blockIdx.x] = cache[0];
