// Bandwidth of one implementation of a contract over a range of sizes, and of
// CUB's DeviceReduce on the same inputs in the same process, for the grader's
// bench and gpucheck. Beside each size, its floor (lab::bench_with_floor): the
// larger of an empty kernel's launch, timed with the lab and CUB in the same
// batches and rounds, and the input's bytes at the GPU's theoretical
// bandwidth; time / floor says how far a call is from the least any call
// could cost. The floor is a lower bound: a row where a call beats it says so
// (`BELOW THE FLOOR`), and the grader records it (floor_below_all).
// Only the instructor's reference solutions are built into it (no student
// code), so it calls them in-process, timed with CUDA events: the bandwidth
// test's routine (warm-up, median of batches, inputs rotated so no call reads
// from L2); each size is checked against the CPU reference first, and a wrong
// size reports no figure.
//
// Built once per implementation with BENCH_NAME (its name) and BENCH_TRAITS
// (SumTraits or MaxTraits, tests/support/contracts.cuh).
//
// --profile=LOG2 is `grader profile`'s mode: one size, one call checked
// against the reference, then one more call between cudaProfilerStart and
// cudaProfilerStop, so that `ncu --profile-from-start off` sees exactly the
// kernels of one call (however many the lab launches); no ceiling, no CUB.
//
// usage: bench-<name> [--sizes=LOG2,LOG2,...] [--json=FILE]
//        bench-<name> --profile=LOG2 [--json=FILE]
#include <cuda_profiler_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench_device.hpp"
#include "contracts.cuh"
#include "cuda_stream.cuh"
#include "device_buffer.cuh"
#include "direct_calls.hpp"
#include "generate.cuh"
#include "json.hpp"

namespace {

struct Row {
  int log2n = 0;
  std::size_t n = 0;
  std::string status = "ok";                                 // ok | wrong | no_memory
  double gbps = 0, median_ms = 0, cub_gbps = 0, cub_ms = 0;  // the best round's medians
  double launch_ms = 0, bytes_ms = 0;  // an empty kernel; the bytes at theoretical speed
  double floor_ms = 0;                 // the larger of the two
  std::string detail;

  std::string below_floor() const {  // the calls faster than the floor: none, if it is one
    std::string who;
    if (median_ms < floor_ms) who += " lab";
    if (cub_ms < floor_ms) who += " cub";
    return who;
  }
};

using Traits = lab::test::BENCH_TRAITS;
constexpr int kRounds = 3;
using T = Traits::T;

Row bench_size(int log2n, const lab::DeviceInfo& info, cudaStream_t stream) {
  Row row;
  row.log2n = log2n;
  row.n = std::size_t{1} << log2n;
  const std::size_t n = row.n;
  const std::size_t copies = lab::rotation_count(n * sizeof(T), info);
  const std::size_t workspace_bytes =
      lab::test::direct::workspace_bytes(Traits::kFn, Traits::kArg, n);
  if (copies * n * sizeof(T) + workspace_bytes + (std::size_t{1} << 28) > info.free_mem_bytes) {
    row.status = "no_memory";
    return row;
  }
  lab::DeviceBuffer<T> inputs(copies * n);
  const Traits::Input spec = Traits::bandwidth_input(0x5eed0000u + static_cast<unsigned>(log2n), n);
  for (std::size_t c = 0; c < copies; ++c) lab::generate(inputs.get() + c * n, n, spec, stream);
  lab::DeviceBuffer<unsigned char> workspace(workspace_bytes);
  workspace.fill_bytes(0, stream);  // the contract's rule: zeroed once, then kept
  lab::DeviceBuffer<T> out(1);
  const T expected = Traits::reference(spec);
  auto call = [&](long k) {
    lab::test::Invocation c;
    c.fn = Traits::kFn;
    c.arg = Traits::kArg;
    c.n = n;
    c.in = inputs.get() + static_cast<std::size_t>(k) % copies * n;
    c.out = out.get();
    c.scratch = workspace.get();
    lab::test::direct::invoke(c, stream);
    CUDA_CHECK_LAUNCH();
  };
  out.fill_bytes(0xA5, stream);
  call(0);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  T got{};
  CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
  if (!Traits::same(got, expected) || lab::test::direct::todo_reached()) {
    row.status = "wrong";
    row.detail = "expected " + Traits::show(expected) + ", got " + Traits::show(got);
    return row;
  }
  const std::size_t cub_bytes = Traits::cub_bytes(n);
  lab::DeviceBuffer<unsigned char> cub_temp(cub_bytes);
  auto cub_call = [&](long k) {
    Traits::run_cub(inputs.get() + static_cast<std::size_t>(k) % copies * n, n, out.get(),
                    cub_temp.get(), cub_bytes, stream);
  };
  // The lab, CUB and the floor, timed alike in kRounds rounds taken in turn.
  // Near the memory's limit the lab and CUB differ by 1-2%, and the GPU's and
  // host's speed drift by as much over a run: taken in turn, all see the same
  // drift.
  const std::size_t bytes = n * sizeof(T);
  const lab::FloorBench timed = lab::bench_with_floor(
      {call, cub_call},
      [&](long k) -> const void* {
        return inputs.get() + static_cast<std::size_t>(k) % copies * n;
      },
      bytes, info.theoretical_gbps(), stream, kRounds);
  row.median_ms = timed.calls[0].median_ms;
  row.cub_ms = timed.calls[1].median_ms;
  row.gbps = bytes / (row.median_ms * 1e6);
  row.cub_gbps = bytes / (row.cub_ms * 1e6);
  row.launch_ms = timed.launch_ms();
  row.bytes_ms = timed.bytes_ms;
  row.floor_ms = timed.floor_ms();
  return row;
}

// One checked call, then one call inside the profiler's range. status: ok,
// wrong (profiled all the same: its numbers still say something), or
// not_implemented (the skeleton's TODO ran: nothing worth profiling).
std::string profile_size(int log2n, cudaStream_t stream, std::string* detail) {
  const std::size_t n = std::size_t{1} << log2n;
  lab::DeviceBuffer<T> input(n);
  const Traits::Input spec = Traits::bandwidth_input(0x5eed0000u + static_cast<unsigned>(log2n), n);
  lab::generate(input.get(), n, spec, stream);
  const std::size_t workspace_bytes =
      lab::test::direct::workspace_bytes(Traits::kFn, Traits::kArg, n);
  lab::DeviceBuffer<unsigned char> workspace(workspace_bytes);
  workspace.fill_bytes(0, stream);  // the contract's rule: zeroed once, then kept
  lab::DeviceBuffer<T> out(1);
  const T expected = Traits::reference(spec);
  lab::test::Invocation c;
  c.fn = Traits::kFn;
  c.arg = Traits::kArg;
  c.n = n;
  c.in = input.get();
  c.out = out.get();
  c.scratch = workspace.get();
  out.fill_bytes(0xA5, stream);
  lab::test::direct::invoke(c, stream);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (lab::test::direct::todo_reached()) return "not_implemented";
  T got{};
  CUDA_CHECK(cudaMemcpy(&got, out.get(), sizeof got, cudaMemcpyDeviceToHost));
  std::string status = "ok";
  if (!Traits::same(got, expected)) {
    status = "wrong";
    *detail = "expected " + Traits::show(expected) + ", got " + Traits::show(got);
  }
  CUDA_CHECK(cudaProfilerStart());
  lab::test::direct::invoke(c, stream);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaProfilerStop());
  return status;
}

int profile_main(int log2n, const char* json_path) {
  lab::CudaStream stream;
  const lab::DeviceInfo info = lab::query_device();
  std::string detail;
  const std::string status = profile_size(log2n, stream, &detail);
  std::printf("%s on %s: 2^%d elements, %s %s\n", BENCH_NAME, info.name.c_str(), log2n,
              status.c_str(), detail.c_str());
  const std::string json =
      "{\"name\":" + lab::json_string(BENCH_NAME) +
      ",\"contract\":" + lab::json_string(Traits::kWhat) +
      ",\"device\":" + lab::json_string(info.name) + ",\"log2n\":" + std::to_string(log2n) +
      ",\"status\":" + lab::json_string(status) + ",\"detail\":" + lab::json_string(detail) + "}\n";
  if (json_path && !lab::write_report(json_path, json)) return 1;
  return status == "ok" ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {16, 18, 20, 22, 24, 26, 28, 30};
  const char* json_path = nullptr;
  int profile_log2n = -1;
  for (int i = 1; i < argc; ++i) {
    if (const char* v = lab::flag_value(argv[i], "--sizes=")) {
      sizes.clear();
      for (const char* p = v; *p;) {
        char* end = nullptr;
        sizes.push_back(static_cast<int>(std::strtol(p, &end, 10)));
        p = end;
        if (*p == ',') ++p;
        else if (*p) break;
      }
    } else if (const char* v = lab::flag_value(argv[i], "--profile=")) {
      profile_log2n = std::atoi(v);
      if (profile_log2n < 10 || profile_log2n > 31) {
        std::fprintf(stderr, "--profile=LOG2: LOG2 from 10 to 31\n");
        return 2;
      }
    } else if (const char* v = lab::flag_value(argv[i], "--json=")) {
      json_path = v;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--sizes=LOG2,LOG2,...] [--json=FILE]\n"
                   "       %s --profile=LOG2 [--json=FILE]\n",
                   argv[0], argv[0]);
      return 2;
    }
  }
  std::string why;
  if (!lab::cuda_device_available(&why)) {
    std::printf("SKIP %s: %s\n", BENCH_NAME, why.c_str());
    return 77;
  }
  try {
    if (profile_log2n >= 0) return profile_main(profile_log2n, json_path);
    const lab::DeviceInfo info = lab::query_device();
    lab::CudaStream stream;
    const double ceiling = lab::copy_ceiling_gbps(lab::copy_ceiling_bytes(info), stream);
    std::vector<Row> rows;
    for (const int s : sizes) rows.push_back(bench_size(s, info, stream));

    std::string json = "{\"name\":" + lab::json_string(BENCH_NAME) +
                       ",\"contract\":" + lab::json_string(Traits::kWhat) +
                       ",\"device\":" + lab::json_string(info.name) +
                       ",\"ceiling_gbps\":" + std::to_string(ceiling) +
                       ",\"theoretical_gbps\":" + std::to_string(info.theoretical_gbps()) +
                       ",\"sizes\":[";
    std::printf("%s on %s (copy ceiling %.0f GB/s)\n", BENCH_NAME, info.name.c_str(), ceiling);
    std::string beaten;  // sizes where a timed call beat the floor, and which
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      json += std::string(i ? "," : "") + "{\"log2n\":" + std::to_string(r.log2n) +
              ",\"n\":" + std::to_string(r.n) + ",\"status\":" + lab::json_string(r.status) +
              ",\"gbps\":" + std::to_string(r.gbps) +
              ",\"median_ms\":" + std::to_string(r.median_ms) +
              ",\"cub_gbps\":" + std::to_string(r.cub_gbps) +
              ",\"cub_median_ms\":" + std::to_string(r.cub_ms) +
              ",\"launch_us\":" + std::to_string(r.launch_ms * 1e3) +
              ",\"bytes_us\":" + std::to_string(r.bytes_ms * 1e3) +
              ",\"floor_us\":" + std::to_string(r.floor_ms * 1e3) +
              ",\"detail\":" + lab::json_string(r.detail) + "}";
      const double over = r.floor_ms > 0 ? r.median_ms / r.floor_ms : 0;
      const double cub_over = r.floor_ms > 0 ? r.cub_ms / r.floor_ms : 0;
      const std::string below = r.status == "ok" ? r.below_floor() : "";
      beaten += below.empty() ? "" : " 2^" + std::to_string(r.log2n) + ":" + below;
      std::printf("  2^%-2d %10zu  %-9s %8.1f GB/s %5.2fx floor   CUB %8.1f GB/s %5.2fx floor"
                  "   (floor %.2f us)  %s%s\n",
                  r.log2n, r.n, r.status.c_str(), r.gbps, over, r.cub_gbps, cub_over,
                  r.floor_ms * 1e3, below.empty() ? "" : ("BELOW THE FLOOR:" + below + " ").c_str(),
                  r.detail.c_str());
    }
    if (beaten.empty()) std::printf("  the floor is at or below every timed call at every size\n");
    else std::printf("  THE FLOOR IS NOT A FLOOR: beaten at%s\n", beaten.c_str());
    json += "]}\n";
    if (json_path && !lab::write_report(json_path, json)) return 1;
    for (const Row& r : rows)
      if (r.status == "wrong") return 1;
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", BENCH_NAME, e.what());
    return 1;
  }
}
