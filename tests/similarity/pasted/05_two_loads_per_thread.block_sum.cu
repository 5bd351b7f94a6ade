  // (a student's paste of tests/similarity/public/reduce_sample_style.cu:
  // blockSize read as kThreads, the lab's names for the buffers, the
  // warpReduce call written out where it was called)
  __shared__ int sdata[kThreads];
  unsigned int tid = threadIdx.x;
  std::size_t i = blockIdx.x * (kThreads * 2) + threadIdx.x;
  int mySum = (i < n) ? in[i] : 0;
  if (i + kThreads < n) mySum += in[i + kThreads];
  sdata[tid] = mySum;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) {
      sdata[tid] = mySum = mySum + sdata[tid + s];
    }
    __syncthreads();
  }
  if (tid < 32) {
    volatile int *vdata = sdata;
    if (kThreads >= 64) vdata[tid] += vdata[tid + 32];
    if (kThreads >= 32) vdata[tid] += vdata[tid + 16];
    if (kThreads >= 16) vdata[tid] += vdata[tid + 8];
    if (kThreads >= 8) vdata[tid] += vdata[tid + 4];
    if (kThreads >= 4) vdata[tid] += vdata[tid + 2];
    if (kThreads >= 2) vdata[tid] += vdata[tid + 1];
  }
  if (tid == 0) block_sums[blockIdx.x] = sdata[0];
