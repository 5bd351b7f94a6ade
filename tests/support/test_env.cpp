#include "test_env.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runner_link.hpp"

namespace lab::test {
namespace {
Identity g_identity;
std::uint64_t g_seed = 0;
double g_ceiling = 0.0;
bool g_first_call_only = false;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

void set_identity(Identity id) { g_identity = std::move(id); }
const Identity& identity() { return g_identity; }

std::uint64_t base_seed() { return g_seed; }
void set_base_seed(std::uint64_t seed) { g_seed = seed; }
std::uint64_t case_seed(std::uint64_t a, std::uint64_t b) { return mix(g_seed ^ mix(a ^ mix(b))); }

bool first_call_only() { return g_first_call_only; }
void set_first_call_only(bool on) { g_first_call_only = on; }

bool perf_disabled() {
  const char* v = std::getenv("LAB_SKIP_PERF");
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

void set_given_ceiling_gbps(double gbps) { g_ceiling = gbps; }

double ceiling_gbps(const std::function<double()>& measure) {
  if (g_ceiling > 0) return g_ceiling;
  // No process of the lab's may run (or keep the machine busy) meanwhile.
  RunnerLink::get().stop();
  g_ceiling = measure();
  return g_ceiling;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace lab::test
