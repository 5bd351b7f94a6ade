  // (mimics a student's paste of reduce1 from a public sample file, for the
  // similarity tests: the sample's names as macros and a typedef for the
  // lab's, cg::sync read as __syncthreads, SharedMemory<T> as a static array)
  typedef int T;
#define g_idata in
#define g_odata block_sums
  __shared__ T sdata[kThreads];

  // load shared mem
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

  sdata[tid] = (i < n) ? g_idata[i] : 0;

  __syncthreads();

  // do reduction in shared mem
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    int index = 2 * s * tid;

    if (index < blockDim.x) {
      sdata[index] += sdata[index + s];
    }

    __syncthreads();
  }

  // write result for this block to global mem
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
#undef g_idata
#undef g_odata
