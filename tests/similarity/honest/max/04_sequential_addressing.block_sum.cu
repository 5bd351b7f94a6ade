  __shared__ int data[kThreads];
  const auto lane = threadIdx.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * kThreads;
  data[lane] = (first + lane < n) ? in[first + lane] : 0;
  __syncthreads();
  #pragma unroll
  for (unsigned span = kThreads / 2; span >= 1; span /= 2) {
    if (lane < span) data[lane] += data[lane + span];
    __syncthreads();
  }
  if (!lane) block_sums[blockIdx.x] = *data;
