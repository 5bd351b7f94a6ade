#include "float_inputs.hpp"

#include <algorithm>
#include <thread>
#include <vector>

#include "max_op.hpp"

namespace lab {

float reference_max(const FloatInput& input) {
  const std::size_t n = input.n;
  const unsigned workers = n < (1u << 22) ? 1u : std::max(1u, std::thread::hardware_concurrency());
  std::vector<float> partial(workers, -INFINITY);
  auto work = [&](unsigned w) {
    const std::size_t begin = n / workers * w + std::min<std::size_t>(w, n % workers);
    const std::size_t end = begin + n / workers + (w < n % workers ? 1 : 0);
    float m = -INFINITY;
    for (std::size_t i = begin; i < end; ++i) m = max_op(m, input.at(i));
    partial[w] = m;
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& t : pool) t.join();
  float m = -INFINITY;
  for (const float p : partial) m = max_op(m, p);
  return m;
}

}  // namespace lab
