  // (mimics a student's paste of reduce3 from a public sample file, for the
  // similarity tests: the sample's names declared as aliases of the lab's,
  // cg::sync read as __syncthreads, SharedMemory<T> as a static array)
  typedef int T;
  auto &g_idata = in;
  auto &g_odata = block_sums;
  __shared__ T sdata[kThreads];

  // perform first level of reduction,
  // reading from global memory, writing to shared memory
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;

  T mySum = (i < n) ? g_idata[i] : 0;

  if (i + blockDim.x < n) mySum += g_idata[i + blockDim.x];

  sdata[tid] = mySum;
  __syncthreads();

  // do reduction in shared mem
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) {
      sdata[tid] = mySum = mySum + sdata[tid + s];
    }

    __syncthreads();
  }

  // write result for this block to global mem
  if (tid == 0) g_odata[blockIdx.x] = mySum;
