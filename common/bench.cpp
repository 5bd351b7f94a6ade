#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace lab {

BenchResult bench_calls(const TimeCalls& time_calls, std::size_t bytes_per_call,
                        const BenchConfig& config) {
  long next = 0;
  // Warm-up: first-call costs (module load, page faults, clocks ramping up)
  // stay out of the figures; the second call sizes the batches.
  time_calls(next, 1);
  next += 1;
  const double one = std::max(time_calls(next, 1), 1e-4);
  next += 1;
  const int per_batch = static_cast<int>(
      std::clamp(std::ceil(config.min_batch_ms / one), 1.0, double(config.max_calls_per_batch)));

  std::vector<double> per_call;
  for (int s = 0; s < config.samples; ++s) {
    per_call.push_back(time_calls(next, per_batch) / per_batch);
    next += per_batch;
  }
  std::sort(per_call.begin(), per_call.end());
  BenchResult r;
  r.bytes_per_call = bytes_per_call;
  r.samples = config.samples;
  r.calls_per_batch = per_batch;
  r.median_ms = per_call[per_call.size() / 2];
  r.min_ms = per_call.front();
  r.max_ms = per_call.back();
  return r;
}

BenchResult bench_host(const std::function<void(long call)>& call, std::size_t bytes_per_call,
                       const BenchConfig& config) {
  return bench_calls(
      [&](long first, int count) {
        const WallTimer timer;
        for (int k = 0; k < count; ++k) call(first + k);
        return timer.ms();
      },
      bytes_per_call, config);
}

double host_copy_ceiling_gbps(std::size_t bytes, unsigned threads, const BenchConfig& config) {
  std::vector<unsigned char> src(bytes, 0x5a), dst(bytes, 0);
  const std::size_t slice = (bytes + threads - 1) / threads;
  auto copy_slice = [&](unsigned t) {
    const std::size_t begin = std::min(bytes, t * slice);
    std::memcpy(dst.data() + begin, src.data() + begin, std::min(bytes, begin + slice) - begin);
  };
  const BenchResult r = bench_host(
      [&](long) {
        std::vector<std::thread> pool;
        for (unsigned t = 1; t < threads; ++t) pool.emplace_back(copy_slice, t);
        copy_slice(0);
        for (auto& th : pool) th.join();
      },
      2 * bytes, config);
  return r.gbps();
}

bool write_report(const char* path, const std::string& json) {
  std::FILE* f = std::fopen(path, "w");
  bool ok = f != nullptr && std::fputs(json.c_str(), f) >= 0;
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "cannot write %s\n", path);
  return ok;
}

}  // namespace lab
