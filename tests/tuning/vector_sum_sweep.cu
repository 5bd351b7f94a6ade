// Parameter sweep behind lab 09's constants: a one-pass int-sum kernel with
// 16-byte loads, over loads in flight per thread (U), blocks per SM (B) and
// the load's cache hint, against CUB DeviceReduce::Sum in the same process,
// at every size from 2^16 to 2^30. Prints a table and writes JSON; the
// figures that chose lab 09's constants are committed in tests/gpu_runs/.
//
// Runs each size twice: input 16-byte aligned, and starting 1 int late.
//
// usage: vector-sum-sweep [--json=FILE]
#include <cub/device/device_reduce.cuh>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_device.hpp"
#include "cuda_check.cuh"
#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "device_info.hpp"
#include "generate.cuh"
#include "int_inputs.hpp"
#include "json.hpp"

namespace {

enum Hint { kDefault, kStreaming, kPrefetch256 };

template <int H>
__device__ __forceinline__ int4 load16(const int4* p) {
  if constexpr (H == kStreaming) {
    return __ldcs(p);
  } else if constexpr (H == kPrefetch256) {
#if __CUDA_ARCH__ >= 800  // the L2 prefetch-size qualifier exists from Ampere on
    int4 v;
    asm volatile("ld.global.nc.L2::256B.v4.s32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
#else
    return __ldg(p);
#endif
  } else {
    return __ldg(p);
  }
}

template <int U, int H>
__global__ void __launch_bounds__(1024)
    vector_sum(const int* __restrict__ in, std::size_t n, int* __restrict__ out) {
  const std::size_t misaligned = (reinterpret_cast<std::uintptr_t>(in) / 4) % 4;
  const std::size_t head = misaligned ? (4 - misaligned < n ? 4 - misaligned : n) : 0;
  const int4* body = reinterpret_cast<const int4*>(in + head);
  const std::size_t vectors = (n - head) / 4;
  const std::size_t tail = head + vectors * 4;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t t = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  int sum = 0;
  std::size_t i = t;
  for (; i + (U - 1) * stride < vectors; i += U * stride) {
    int4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = load16<H>(body + i + k * stride);
#pragma unroll
    for (int k = 0; k < U; ++k) sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  for (; i < vectors; i += stride) {
    const int4 v = load16<H>(body + i);
    sum += (v.x + v.y) + (v.z + v.w);
  }
  if (t < head) sum += in[t];
  if (t < n - tail) sum += in[tail + t];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ int warp_sums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) atomicAdd(out, sum);
  }
}

// The same, but block b reads one contiguous range of the input (CUB's "even
// share") in tiles of blockDim.x * U vectors, instead of striding over all of it.
template <int U, int H>
__global__ void __launch_bounds__(1024)
    chunked_sum(const int* __restrict__ in, std::size_t n, int* __restrict__ out) {
  const std::size_t misaligned = (reinterpret_cast<std::uintptr_t>(in) / 4) % 4;
  const std::size_t head = misaligned ? (4 - misaligned < n ? 4 - misaligned : n) : 0;
  const int4* body = reinterpret_cast<const int4*>(in + head);
  const std::size_t vectors = (n - head) / 4;
  const std::size_t tail = head + vectors * 4;
  const std::size_t tile = std::size_t{blockDim.x} * U;
  const std::size_t tiles_per_block = ((vectors + tile - 1) / tile + gridDim.x - 1) / gridDim.x;
  const std::size_t begin = std::size_t{blockIdx.x} * tiles_per_block * tile;
  const std::size_t end =
      begin + tiles_per_block * tile < vectors ? begin + tiles_per_block * tile : vectors;
  int sum = 0;
  std::size_t base = begin;
  for (; base + tile <= end; base += tile) {
    int4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = load16<H>(body + base + k * blockDim.x + threadIdx.x);
#pragma unroll
    for (int k = 0; k < U; ++k) sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  for (std::size_t i = base + threadIdx.x; i < end; i += blockDim.x) {
    const int4 v = load16<H>(body + i);
    sum += (v.x + v.y) + (v.z + v.w);
  }
  const std::size_t t = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (t < head) sum += in[t];
  if (t < n - tail) sum += in[tail + t];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ int warp_sums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) atomicAdd(out, sum);
  }
}

struct Variant {
  std::string name;
  std::function<void(const int*, std::size_t, int*, cudaStream_t)> run;
};

template <bool kChunked, int U, int H>
Variant make(int per_sm, int sms, unsigned threads = 256) {
  const char* hints[] = {"ldg", "ldcs", "L2_256B"};
  return {std::string(kChunked ? "chunk" : "grid") + "_U" + std::to_string(U) + "_B" +
              std::to_string(per_sm) + "_T" + std::to_string(threads) + "_" + hints[H],
          [per_sm, sms, threads](const int* in, std::size_t n, int* out, cudaStream_t s) {
            const std::size_t vectors = n / 4 + 1;
            std::size_t blocks = std::size_t{static_cast<unsigned>(per_sm * sms)};
            const std::size_t useful = (vectors + threads * U - 1) / (threads * U);
            if (useful < blocks) blocks = useful;
            const unsigned grid = static_cast<unsigned>(blocks ? blocks : 1);
            CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(int), s));
            if constexpr (kChunked) chunked_sum<U, H><<<grid, threads, 0, s>>>(in, n, out);
            else vector_sum<U, H><<<grid, threads, 0, s>>>(in, n, out);
            CUDA_CHECK_LAUNCH();
          }};
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    json_path = lab::flag_value(argv[i], "--json=");
    if (!json_path) {
      std::fprintf(stderr, "usage: %s [--json=FILE]\n", argv[0]);
      return 2;
    }
  }
  std::string why;
  if (!lab::cuda_device_available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  const lab::DeviceInfo info = lab::query_device();
  lab::CudaStream stream;
  std::vector<Variant> variants;
  // Second sweep, around the best of the first (committed in tests/gpu_runs/h200/).
  for (int per_sm : {1, 2, 4}) {
    variants.push_back(make<true, 4, kStreaming>(per_sm, info.sm_count, 512));
    variants.push_back(make<true, 4, kStreaming>(per_sm, info.sm_count, 1024));
    variants.push_back(make<true, 2, kStreaming>(per_sm, info.sm_count, 1024));
  }
  for (int per_sm : {2, 4, 16}) {
    variants.push_back(make<true, 4, kStreaming>(per_sm, info.sm_count));
    variants.push_back(make<false, 4, kStreaming>(per_sm, info.sm_count));
  }
  variants.push_back(make<false, 4, kStreaming>(2, info.sm_count, 1024));
  variants.push_back(make<false, 8, kStreaming>(2, info.sm_count, 1024));
  // CUB, through the same call shape (listed twice, first and last, to show drift).
  lab::DeviceBuffer<unsigned char> cub_temp(std::size_t{64} << 20);
  variants.insert(variants.begin(),
                  {"cub_first", [&](const int* in, std::size_t n, int* out, cudaStream_t s) {
                     std::size_t bytes = cub_temp.bytes();
                     CUDA_CHECK(cub::DeviceReduce::Sum(cub_temp.get(), bytes, in, out, n, s));
                   }});
  variants.push_back({"cub", [&](const int* in, std::size_t n, int* out, cudaStream_t s) {
                        std::size_t bytes = cub_temp.bytes();
                        CUDA_CHECK(cub::DeviceReduce::Sum(cub_temp.get(), bytes, in, out, n, s));
                      }});

  const double ceiling = lab::copy_ceiling_gbps(lab::copy_ceiling_bytes(info), stream);
  std::string json = "{\"device\":" + lab::json_string(info.name) +
                     ",\"ceiling_gbps\":" + std::to_string(ceiling) + ",\"rows\":[";
  const std::vector<int> sizes = {16, 20, 24, 26, 28, 29, 30};
  bool first_row = true;
  for (const std::size_t offset : {std::size_t{0}}) {
    std::printf("\n%s, copy ceiling %.0f GB/s; GB/s of input read; input %s\n%-22s",
                info.name.c_str(), ceiling,
                offset ? "starts 1 int past a 16-byte boundary" : "16-byte aligned", "variant");
    for (int s : sizes) std::printf(" %6s", ("2^" + std::to_string(s)).c_str());
    std::printf("\n");
    std::vector<std::vector<double>> table(variants.size());
    for (int log2n : sizes) {
      const std::size_t n = std::size_t{1} << log2n;
      const std::size_t copies = lab::rotation_count(n * sizeof(int), info);
      const std::size_t pitch = n + 4;  // room to start a copy `offset` ints late
      lab::DeviceBuffer<int> inputs(copies * pitch);
      const lab::IntInput spec{lab::IntPattern::kRandom, 77u + log2n, n};
      for (std::size_t c = 0; c < copies; ++c)
        lab::generate(inputs.get() + c * pitch + offset, n, spec, stream);
      const int expected = static_cast<int>(lab::reference_sum(spec));
      lab::DeviceBuffer<int> out(1);
      for (std::size_t v = 0; v < variants.size(); ++v) {
        auto call = [&](long k) {
          variants[v].run(inputs.get() + static_cast<std::size_t>(k) % copies * pitch + offset, n,
                          out.get(), stream);
        };
        call(0);
        stream.synchronize();
        int got = 0;
        CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
        table[v].push_back(got == expected ? lab::bench_device(call, n * sizeof(int), stream).gbps()
                                           : -1.0);
      }
    }
    for (std::size_t v = 0; v < variants.size(); ++v) {
      std::printf("%-22s", variants[v].name.c_str());
      json += std::string(first_row ? "" : ",") +
              "{\"variant\":" + lab::json_string(variants[v].name) +
              ",\"offset\":" + std::to_string(offset) + ",\"gbps\":[";
      first_row = false;
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        std::printf(" %6.0f", table[v][k]);
        json += std::string(k ? "," : "") + std::to_string(table[v][k]);
      }
      json += "]}";
      std::printf("\n");
    }
  }
  json += "]}\n";
  if (json_path && !lab::write_report(json_path, json)) return 1;
  return 0;
}
