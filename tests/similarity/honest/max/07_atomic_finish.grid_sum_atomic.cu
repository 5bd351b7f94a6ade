  __shared__ int data[kThreads];
  const auto lane = threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * kThreads;
  int partial0 = 0, partial1 = 0;
  std::size_t k = static_cast<std::size_t>(blockIdx.x) * kThreads + lane;
  for (; k + threads < n; k += 2 * threads) {
    partial0 += in[k];
    partial1 += in[k + threads];
  }
  if (k < n) partial0 += in[k];
  data[lane] = partial0 + partial1;
  __syncthreads();
  #pragma unroll
  for (unsigned span = kThreads / 2; span >= 1; span /= 2) {
    if (lane < span) data[lane] += data[lane + span];
    __syncthreads();
  }
  if (!lane) atomicAdd(out, *data);
