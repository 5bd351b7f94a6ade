  __shared__ int data[kThreads];
  const auto lane = threadIdx.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * kThreads;
  data[lane] = (first + lane < n) ? in[first + lane] : 0;
  __syncthreads();
  #pragma unroll
  for (unsigned half = 1; half < kThreads; half *= 2) {
    const bool active = lane % (half + half) == 0;
    if (active) data[lane] += data[lane + half];
    __syncthreads();
  }
  if (!lane) block_sums[blockIdx.x] = *data;
