  __shared__ float cache[kThreads];
  unsigned me = threadIdx.x;
  std::size_t everyone = std::size_t{gridDim.x} * blockDim.x;
  float seen = -INFINITY;
  for (std::size_t at = std::size_t{blockDim.x} * blockIdx.x + me; at < n; at += everyone) {
    seen = lab::max_op(in[at], seen);
  }
  cache[me] = seen;
  unsigned live = kThreads;
  do {
    __syncthreads();
    live = live / 2;
    if (me < live) cache[me] = lab::max_op(cache[me + live], cache[me]);
  } while (live > 1);
  if (me == 0) block_maxes[blockIdx.x] = cache[0];
