#include "float_sum_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

namespace lab {

__int128 exact_sum_fixed(const SumInput& input) {
  const std::size_t n = input.n;
  const unsigned workers = n < (1u << 20) ? 1u : std::max(1u, std::thread::hardware_concurrency());
  std::vector<__int128> partial(workers, 0);
  auto work = [&](unsigned w) {
    const std::size_t begin = n / workers * w + std::min<std::size_t>(w, n % workers);
    const std::size_t end = begin + n / workers + (w < n % workers ? 1 : 0);
    __int128 s = 0;
    for (std::size_t i = begin; i < end; ++i) s += to_fixed(input.at(i));
    partial[w] = s;
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  __int128 total = 0;
  for (const auto p : partial) total += p;
  return total;
}

double fixed_to_double(__int128 v) { return std::ldexp(static_cast<double>(v), -kFixedPointBits); }

double error_of(float got, __int128 exact) {
  if (!std::isfinite(got)) return INFINITY;
  // Exact difference when `got` is a multiple of 2^-44 (|got| >= 2^-20 is), else rounded.
  if (std::fabs(got) >= 0x1p-20f || got == 0.0f)
    return std::fabs(fixed_to_double(to_fixed(got) - exact));
  return std::fabs(static_cast<double>(got) - fixed_to_double(exact));
}

double ulps_of(float got, __int128 exact) {
  return error_of(got, exact) / std::ldexp(1.0, std::ilogb(fixed_to_double(exact)) - 23);
}

}  // namespace lab
