// Common advice for an accurate float sum (deck 11 quotes it): use double
// instead of float, and sort the data from smallest magnitude to largest. This study
// measures both halves on the GPU with lab 11's reference solution:
//   - accuracy: each method's error on wide_shuffled inputs (random signs,
//     magnitudes 2^-20 to 2^20) and on the same values sorted by magnitude on
//     the GPU, against the exact sum, over several seeds (one draw proves
//     little: the error of a float sum swings with the draw);
//   - cost: the sort (CUB radix sort, with the encoding that makes it sort by
//     magnitude) beside each method's sum, at the bandwidth test's size, both
//     timed with the one benchmark routine, in the same process.
// The sorted copy is checked: ascending magnitudes, and the same exact sum.
//
// usage: sort-first-study [--seeds=K] [--json=FILE]
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench_device.hpp"
#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "float_sum_contract.cuh"
#include "float_sum_inputs.hpp"
#include "generate.cuh"
#include "json.hpp"

namespace {

constexpr FloatSumMethod kMethods[] = {FloatSumMethod::kNaive, FloatSumMethod::kPairwise,
                                       FloatSumMethod::kKahan, FloatSumMethod::kDouble};

// A float's bits rotated left by one: the magnitude in the top 31 bits, the
// sign in the lowest, so that unsigned order is order of magnitude.
__global__ void encode_magnitude(const float* in, std::uint32_t* keys, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint32_t b = __float_as_uint(in[i]);
    keys[i] = (b << 1) | (b >> 31);
  }
}

// The inverse, in place: keys back into floats.
__global__ void decode_magnitude(std::uint32_t* keys, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint32_t k = keys[i];
    keys[i] = (k >> 1) | (k << 31);
  }
}

// Sorts in[0, n) by magnitude into out (which must not alias in): encode,
// radix sort, decode, all queued on `stream`. `keys` holds n words.
class MagnitudeSort {
 public:
  explicit MagnitudeSort(std::size_t n) : n_(n), keys_(n) {
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes_, keys_.get(), keys_.get(),
                                              static_cast<int>(n)));
    temp_ = lab::DeviceBuffer<unsigned char>(temp_bytes_);
  }
  void run(const float* in, float* out, cudaStream_t stream) {
    constexpr unsigned kBlocks = 2048, kThreads = 256;
    auto* out_keys = reinterpret_cast<std::uint32_t*>(out);
    encode_magnitude<<<kBlocks, kThreads, 0, stream>>>(in, keys_.get(), n_);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp_.get(), temp_bytes_, keys_.get(), out_keys,
                                              static_cast<int>(n_), 0, 32, stream));
    decode_magnitude<<<kBlocks, kThreads, 0, stream>>>(out_keys, n_);
    CUDA_CHECK_LAUNCH();
  }

 private:
  std::size_t n_;
  lab::DeviceBuffer<std::uint32_t> keys_;
  std::size_t temp_bytes_ = 0;
  lab::DeviceBuffer<unsigned char> temp_;
};

float sum_on_gpu(const float* in, std::size_t n, FloatSumMethod m, void* workspace,
                 cudaStream_t stream) {
  lab::DeviceBuffer<float> out(1);
  out.fill_bytes(0xA5, stream);  // poisoned: a sum that never lands shows as NaN
  reduce_sum_float(in, n, out.get(), workspace, m, stream);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  float got = 0;
  CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
  return got;
}

// An empty string when `sorted` ascends in magnitude and sums to `exact`; else what is wrong.
std::string check_sorted(const std::vector<float>& sorted, __int128 exact) {
  __int128 sum = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i && std::fabs(sorted[i]) < std::fabs(sorted[i - 1]))
      return "not ascending in magnitude at index " + std::to_string(i);
    sum += lab::to_fixed(sorted[i]);
  }
  return sum == exact ? "" : "the sorted copy's exact sum differs from the input's";
}

struct AccuracyRow {
  std::uint64_t seed = 0;
  double exact = 0;
  double ulps[2][4] = {};  // [shuffled, sorted][method]
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 8;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (const char* v = lab::flag_value(argv[i], "--seeds=")) {
      seeds = std::atoi(v);
    } else if (const char* v = lab::flag_value(argv[i], "--json=")) {
      json_path = v;
    } else {
      std::fprintf(stderr, "usage: %s [--seeds=K] [--json=FILE]\n", argv[0]);
      return 2;
    }
  }
  if (seeds < 1) {
    std::fprintf(stderr, "--seeds must be at least 1\n");
    return 2;
  }
  std::string why;
  if (!lab::cuda_device_available(&why)) {
    std::printf("SKIP sort-first-study: %s\n", why.c_str());
    return 77;
  }
  try {
    const lab::DeviceInfo info = lab::query_device();
    lab::CudaStream stream;

    // Accuracy at the accuracy tests' size, same values in two orders.
    const std::size_t n = std::size_t{1} << 24;
    lab::DeviceBuffer<float> shuffled(n), sorted(n);
    lab::DeviceBuffer<unsigned char> workspace(float_sum_workspace_bytes(n));
    workspace.fill_bytes(0, stream);  // the contract's rule: zeroed once, then kept
    MagnitudeSort sorter(n);
    std::vector<AccuracyRow> rows;
    std::vector<float> host(n);
    for (int k = 0; k < seeds; ++k) {
      AccuracyRow row;
      row.seed = lab::mix64(0x50f7f1257ull + static_cast<std::uint64_t>(k));
      const lab::SumInput spec{lab::SumPattern::kWideShuffled, row.seed, n};
      const __int128 exact = lab::exact_sum_fixed(spec);
      row.exact = lab::fixed_to_double(exact);
      lab::generate(shuffled.get(), n, spec, stream);
      sorter.run(shuffled.get(), sorted.get(), stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      CUDA_CHECK(cudaMemcpy(host.data(), sorted.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
      const std::string bad = check_sorted(host, exact);
      if (!bad.empty()) {
        std::fprintf(stderr, "sort-first-study: seed %llu: %s\n",
                     static_cast<unsigned long long>(row.seed), bad.c_str());
        return 1;
      }
      for (int m = 0; m < 4; ++m) {
        row.ulps[0][m] = lab::ulps_of(
            sum_on_gpu(shuffled.get(), n, kMethods[m], workspace.get(), stream), exact);
        row.ulps[1][m] =
            lab::ulps_of(sum_on_gpu(sorted.get(), n, kMethods[m], workspace.get(), stream), exact);
      }
      rows.push_back(row);
    }

    // Cost at the bandwidth test's size: every timed call reads from memory.
    const std::size_t nb = lab::bandwidth_test_elements(info, sizeof(float));
    const std::size_t copies = lab::rotation_count(nb * sizeof(float), info);
    lab::DeviceBuffer<float> inputs(copies * nb), sorted_big(nb);
    for (std::size_t c = 0; c < copies; ++c)
      lab::generate(inputs.get() + c * nb, nb,
                    lab::SumInput{lab::SumPattern::kWideShuffled, 7 + c, nb}, stream);
    lab::DeviceBuffer<unsigned char> workspace_big(float_sum_workspace_bytes(nb));
    workspace_big.fill_bytes(0, stream);
    lab::DeviceBuffer<float> out(1);
    const double ceiling = lab::copy_ceiling_gbps(lab::copy_ceiling_bytes(info), stream);
    auto input = [&](long k) { return inputs.get() + static_cast<std::size_t>(k) % copies * nb; };
    double sum_ms[4];
    for (int m = 0; m < 4; ++m)
      sum_ms[m] =
          lab::bench_device(
              [&](long k) {
                reduce_sum_float(input(k), nb, out.get(), workspace_big.get(), kMethods[m], stream);
                CUDA_CHECK_LAUNCH();
              },
              nb * sizeof(float), stream)
              .median_ms;
    MagnitudeSort big_sorter(nb);
    const double sort_ms =
        lab::bench_device([&](long k) { big_sorter.run(input(k), sorted_big.get(), stream); },
                          nb * sizeof(float), stream)
            .median_ms;
    CUDA_CHECK(cudaStreamSynchronize(stream));

    // Report: a JSON for gpucheck, a table for people.
    const char* order_name[2] = {"shuffled", "sorted"};
    std::string json = "{\"name\":\"sort-first-study\",\"device\":" + lab::json_string(info.name) +
                       ",\"n_accuracy\":" + std::to_string(n) + ",\"accuracy\":[";
    for (std::size_t r = 0; r < rows.size(); ++r) {
      json += std::string(r ? "," : "") + "{\"seed\":" + std::to_string(rows[r].seed) +
              ",\"exact\":" + fmt("%.17g", rows[r].exact);
      for (int o = 0; o < 2; ++o) {
        json += std::string(",\"") + order_name[o] + "_ulps\":{";
        for (int m = 0; m < 4; ++m)
          json += std::string(m ? "," : "") + "\"" + method_name(kMethods[m]) +
                  "\":" + fmt("%.4g", rows[r].ulps[o][m]);
        json += "}";
      }
      json += "}";
    }
    json += "],\"n_timing\":" + std::to_string(nb) + ",\"ceiling_gbps\":" + fmt("%.1f", ceiling) +
            ",\"sort_ms\":" + fmt("%.4f", sort_ms) + ",\"sum_ms\":{";
    for (int m = 0; m < 4; ++m)
      json += std::string(m ? "," : "") + "\"" + method_name(kMethods[m]) +
              "\":" + fmt("%.4f", sum_ms[m]);
    json += "}}\n";
    if (json_path && !lab::write_report(json_path, json)) return 1;

    std::printf("sort-first-study on %s: %d seeds, 2^24 wide_shuffled floats, error in ulps\n",
                info.name.c_str(), seeds);
    std::printf("%-21s %-9s %9s %9s %9s %9s\n", "seed", "order", "naive", "pairwise", "kahan",
                "double");
    for (const AccuracyRow& r : rows)
      for (int o = 0; o < 2; ++o)
        std::printf("%-21llu %-9s %9.3g %9.3g %9.3g %9.3g\n",
                    static_cast<unsigned long long>(r.seed), order_name[o], r.ulps[o][0],
                    r.ulps[o][1], r.ulps[o][2], r.ulps[o][3]);
    std::printf("at 2^%d floats (copy %.0f GB/s): sort by magnitude %.3f ms; sums: naive %.3f, "
                "pairwise %.3f, kahan %.3f, double %.3f ms\n",
                static_cast<int>(std::log2(static_cast<double>(nb))), ceiling, sort_ms, sum_ms[0],
                sum_ms[1], sum_ms[2], sum_ms[3]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sort-first-study: %s\n", e.what());
    return 1;
  }
}
