#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace lab {

namespace {

// Warm-up, then the batch length: first-call costs (module load, page faults,
// clocks ramping up) stay out of the figures; the second call sizes the batches.
int warm_and_size(const TimeCalls& time_calls, long& next, const BenchConfig& config) {
  time_calls(next, 1);
  next += 1;
  const double one = std::max(time_calls(next, 1), 1e-4);
  next += 1;
  if (config.calls_per_batch > 0) return config.calls_per_batch;
  return static_cast<int>(
      std::clamp(std::ceil(config.min_batch_ms / one), 1.0, double(config.max_calls_per_batch)));
}

BenchResult time_batches(const TimeCalls& time_calls, long& next, int per_batch,
                         std::size_t bytes_per_call, const BenchConfig& config) {
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

}  // namespace

BenchResult bench_calls(const TimeCalls& time_calls, std::size_t bytes_per_call,
                        const BenchConfig& config) {
  long next = 0;
  const int per_batch = warm_and_size(time_calls, next, config);
  return time_batches(time_calls, next, per_batch, bytes_per_call, config);
}

std::vector<BenchResult> bench_in_turn(const std::vector<TimeCalls>& calls,
                                       std::size_t bytes_per_call, int rounds,
                                       const BenchConfig& config) {
  // The slowest call's length (the fewest calls): batches of the fastest call's
  // length would make the slowest call's rounds last far longer than needed.
  std::vector<long> next(calls.size(), 0);
  int per_batch = config.max_calls_per_batch;
  for (std::size_t i = 0; i < calls.size(); ++i)
    per_batch = std::min(per_batch, warm_and_size(calls[i], next[i], config));
  std::vector<BenchResult> best(calls.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const BenchResult r = time_batches(calls[i], next[i], per_batch, bytes_per_call, config);
      BenchResult& b = best[i];
      if (round == 0) {
        b = r;
        continue;
      }
      const double fastest = std::min(b.min_ms, r.min_ms), slowest = std::max(b.max_ms, r.max_ms);
      if (r.median_ms < b.median_ms) b = r;
      b.min_ms = fastest;
      b.max_ms = slowest;
    }
  }
  return best;
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
