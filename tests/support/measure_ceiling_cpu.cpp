#include <algorithm>
#include <cstdio>
#include <thread>

#include "bench.hpp"
#include "measure_ceiling.hpp"

namespace lab::test {

std::string measure_ceiling_json() {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  BenchConfig config;
  config.samples = 5;
  const double gbps = host_copy_ceiling_gbps(std::size_t{1} << 28, hw, config);
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "{\"ceiling_gbps\": %.1f, \"theoretical_gbps\": 0, \"device\": \"host CPU\", "
                "\"host_threads\": %u}",
                gbps, hw);
  return buf;
}

}  // namespace lab::test
