  __shared__ float data[kThreads];
  const auto lane = threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * kThreads;
  float hi0 = -INFINITY, hi1 = -INFINITY;
  std::size_t k = static_cast<std::size_t>(blockIdx.x) * kThreads + lane;
  for (; k + threads < n; k += 2 * threads) {
    hi0 = lab::max_op(hi0, in[k]);
    hi1 = lab::max_op(hi1, in[k + threads]);
  }
  if (k < n) hi0 = lab::max_op(hi0, in[k]);
  data[lane] = lab::max_op(hi0, hi1);
  __syncthreads();
  #pragma unroll
  for (unsigned span = kThreads / 2; span >= 1; span /= 2) {
    if (lane < span) data[lane] = lab::max_op(data[lane], data[lane + span]);
    __syncthreads();
  }
  if (!lane) block_maxes[blockIdx.x] = *data;
