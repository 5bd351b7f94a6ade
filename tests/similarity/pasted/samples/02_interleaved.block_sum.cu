  // (mimics a student's paste of reduce0 from a public sample file, for the
  // similarity tests: the sample's names declared as aliases of the lab's,
  // cg::sync read as __syncthreads, SharedMemory<T> as a static array)
  using T = int;
  const T *g_idata = in;
  auto &g_odata = block_sums;
  __shared__ T sdata[kThreads];

  // load shared mem
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

  sdata[tid] = (i < n) ? g_idata[i] : 0;

  __syncthreads();

  // do reduction in shared mem
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    // modulo arithmetic is slow!
    if ((tid % (2 * s)) == 0) {
      sdata[tid] += sdata[tid + s];
    }

    __syncthreads();
  }

  // write result for this block to global mem
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
