  __shared__ int cache[kThreads];
  unsigned me = threadIdx.x;
  std::size_t everyone = std::size_t{gridDim.x} * blockDim.x;
  long long wide = 0;
  for (std::size_t at = std::size_t{blockDim.x} * blockIdx.x + me; at < n; at += everyone) {
    wide += in[at];
  }
  cache[me] = static_cast<int>(wide);
  unsigned live = kThreads;
  do {
    __syncthreads();
    live = live / 2;
    if (me < live) cache[me] = cache[me] + cache[me + live];
  } while (live > 1);
  if (me == 0) atomicAdd(out, cache[0]);
