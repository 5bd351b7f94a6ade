  // (mimics a student's paste of reduce2 from a public sample file, for the
  // similarity tests: the sample's names declared as aliases of the lab's,
  // cg::sync read as __syncthreads, SharedMemory<T> as a static array)
  using T = int;
  const int *const g_idata = in;
  int *const g_odata = block_sums;
  const unsigned int blockSize = kThreads;
  __shared__ T sdata[blockSize];

  // load shared mem
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

  sdata[tid] = (i < n) ? g_idata[i] : 0;

  __syncthreads();

  // do reduction in shared mem
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] += sdata[tid + s];
    }

    __syncthreads();
  }

  // write result for this block to global mem
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
