// The one benchmark routine: warm up, pick a batch of calls long enough for
// the clock, take the median of repeated batches. GPU and CPU labs differ only
// in the clock they pass in (bench_device.hpp uses CUDA events). Several calls
// compared with one another go through bench_in_turn: the same routine, one
// batch length for all, rounds taken in turn.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace lab {

struct BenchConfig {
  int samples = 9;            // median of this many batches
  double min_batch_ms = 5.0;  // a batch repeats calls until it lasts about this long
  int max_calls_per_batch = 1 << 14;
  int calls_per_batch = 0;  // above 0: this many calls a batch, whatever one call costs
};

struct BenchResult {
  std::size_t bytes_per_call = 0;  // bytes of input each call must read (once)
  int samples = 0;
  int calls_per_batch = 0;
  double median_ms = 0.0;  // per call
  double min_ms = 0.0;     // per call, in the fastest batch
  double max_ms = 0.0;     // per call, in the slowest batch
  double gbps() const { return median_ms > 0 ? bytes_per_call / (median_ms * 1e6) : 0.0; }
};

// The one host clock: milliseconds since construction (or restart), from
// std::chrono::steady_clock, which no process can set.
class WallTimer {
 public:
  WallTimer() : t0_(std::chrono::steady_clock::now()) {}
  void restart() { t0_ = std::chrono::steady_clock::now(); }
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

// `time_calls(first, count)` makes calls first .. first+count-1 and returns the
// elapsed milliseconds. Call numbers keep increasing, so a caller can rotate
// through input buffers with `call % buffers`.
using TimeCalls = std::function<double(long first, int count)>;

BenchResult bench_calls(const TimeCalls& time_calls, std::size_t bytes_per_call,
                        const BenchConfig& config = {});

// Calls compared with one another, timed alike: each is warmed up, then all
// share one batch length (the slowest call's: its batch lasts about
// min_batch_ms, the others' less), and `rounds` rounds time every call's
// batches in turn, so that a drift of the clocks or of the host's speed over
// the run reaches every call alike. Each result, in the order of `calls`: its best round's median,
// and its fastest and slowest batch over every round. A call's per-call time
// includes what a batch adds (the events, the first launch's latency), shared
// out over the same number of calls for every call.
std::vector<BenchResult> bench_in_turn(const std::vector<TimeCalls>& calls,
                                       std::size_t bytes_per_call, int rounds,
                                       const BenchConfig& config = {});

// CPU work timed with std::chrono::steady_clock.
BenchResult bench_host(const std::function<void(long call)>& call, std::size_t bytes_per_call,
                       const BenchConfig& config = {});

// memcpy of `bytes` split over `threads` threads, counting bytes read plus bytes
// written: the in-process ceiling for the CPU lab.
double host_copy_ceiling_gbps(std::size_t bytes, unsigned threads, const BenchConfig& config = {});

// Writes a benchmark program's JSON report to `path`. When it cannot, it says
// so on stderr and returns false: the program then exits non-zero, since a
// run whose figures were lost must not look like a success.
bool write_report(const char* path, const std::string& json);

}  // namespace lab
