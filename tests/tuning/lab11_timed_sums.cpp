// Lab 11's timed test on the CPU: the totals its input sums to, and the error
// of the reference's naive, pairwise and compensated sums, added in the order
// the reference's kernels add them (solutions/11_accurate_float_sum/reduce.cu:
// 1024-thread blocks, two per SM, each a contiguous share of 16 KiB tiles,
// four float4 loads a thread a tile; warp shuffles; the last block combines
// the blocks in order). No GPU: it says which seeds a GPU run should replay.
//
// The timed test (tests/support/bandwidth_case.cuh) sums copies of one
// wide_shuffled input, each with one element replaced ("planted") by a value
// of 2^23 to 2^24, and checks every call's answer with the contract's timed
// rule (FloatSumTraits::same_timed in tests/support/contracts.cuh). Its total
// lands anywhere from 0 to a few times 2^30; the naive sum's error does not
// shrink with it. A check relative to the total alone failed a correct naive
// sum whose total was near 0.
//
// usage: lab11-timed-sums errors SM_COUNT SEED[:AT:VALUE]...
//          each input's exact total, and the naive and compensated errors
//          (the spec seed of a wide_shuffled input of 2^27 elements, the
//          bandwidth test's size for an L2 of 16 to 64 MiB; AT:VALUE plants)
//        lab11-timed-sums search FIRST COUNT WINDOW
//          the run seeds (--seed of the checker) in [FIRST, FIRST+COUNT)
//          whose first timed batch plants a copy whose total lies within
//          WINDOW of 0: the first two calls go to copy 0, then one call a
//          copy; the rest of the batch depends on the GPU's speed
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "float_sum_inputs.hpp"

namespace {

constexpr std::size_t kN = std::size_t{1} << 27;
constexpr unsigned kThreads = 1024, kWarps = kThreads / 32;
constexpr std::size_t kTile = std::size_t{kThreads} * 4;  // float4s
constexpr int kDraws = 12;                                // plants looked at per run seed

// tests/support/test_env.cpp's case_seed, for a run seed.
std::uint64_t case_seed(std::uint64_t run, std::uint64_t a, std::uint64_t b) {
  return lab::mix64(run ^ lab::mix64(a ^ lab::mix64(b)));
}

struct Naive {
  float s = 0.0f;
  void add(float x) { s += x; }
  void combine(const Naive& o) { s += o.s; }
  float result() const { return s; }
};

struct Kahan {
  float s = 0.0f, c = 0.0f;
  void add(float x) { combine({x, 0.0f}); }
  void combine(const Kahan& o) {
    const float t = s + o.s, z = t - s, e = (s - (t - z)) + (o.s - z);
    s = t;
    c = c + o.c + e;
  }
  float result() const { return s + c; }
};

// warp_combine's shuffles down: lane 0's accumulator.
template <class Acc>
Acc warp_combine(const Acc* lanes) {
  Acc v[32];
  for (int i = 0; i < 32; ++i) v[i] = lanes[i];
  for (int offset = 16; offset > 0; offset >>= 1)
    for (int i = 0; i + offset < 32; ++i) v[i].combine(v[i + offset]);
  return v[0];
}

template <class Acc>
Acc block_combine(const std::vector<Acc>& threads) {
  Acc warps[kWarps];
  for (unsigned w = 0; w < kWarps; ++w) warps[w] = warp_combine(&threads[w * 32]);
  return warp_combine(warps);
}

template <class Acc>
float kernel_order(const std::vector<float>& x, unsigned blocks) {
  const std::size_t vectors = x.size() / 4;
  const std::size_t per_block = ((vectors + kTile - 1) / kTile + blocks - 1) / blocks * kTile;
  std::vector<Acc> last(kThreads), threads(kThreads);
  for (unsigned b = 0; b < blocks; ++b) {
    const std::size_t begin = b * per_block, end = std::min(begin + per_block, vectors);
    for (unsigned t = 0; t < kThreads; ++t) {
      Acc acc;
      for (std::size_t base = begin; base + kTile <= end; base += kTile)
        for (std::size_t k = 0; k < 4; ++k)
          for (std::size_t lane = 0; lane < 4; ++lane)
            acc.add(x[4 * (base + k * kThreads + t) + lane]);
      threads[t] = acc;
    }
    last[b].combine(block_combine(threads));  // the last block's thread b
  }
  return block_combine(last).result();
}

// The pairwise method (run_tree_passes over pairwise_block): blocks of 256
// elements, each halved in shared memory (t += t + s, s = 128 down to 1),
// pass after pass until one block is left.
float pairwise_order(std::vector<float> level) {
  constexpr std::size_t kBlock = 256;
  while (true) {
    std::vector<float> sums((level.size() + kBlock - 1) / kBlock);
    for (std::size_t b = 0; b < sums.size(); ++b) {
      float partial[kBlock];
      for (std::size_t t = 0; t < kBlock; ++t) {
        const std::size_t i = b * kBlock + t;
        partial[t] = i < level.size() ? level[i] : 0.0f;
      }
      for (std::size_t half = kBlock / 2; half > 0; half >>= 1)
        for (std::size_t t = 0; t < half; ++t) partial[t] += partial[t + half];
      sums[b] = partial[0];
    }
    if (sums.size() == 1) return sums[0];
    level = std::move(sums);
  }
}

int errors(int argc, char** argv) {
  const unsigned blocks = 2 * static_cast<unsigned>(std::atoi(argv[2]));
  for (int a = 3; a < argc; ++a) {
    char* rest = nullptr;
    const lab::SumInput in{lab::SumPattern::kWideShuffled, std::strtoull(argv[a], &rest, 0), kN};
    std::vector<float> x(kN);
    for (std::size_t i = 0; i < kN; ++i) x[i] = in.at(i);
    if (*rest == ':') {
      const std::size_t at = std::strtoull(rest + 1, &rest, 0);
      x[at] = std::strtof(rest + 1, nullptr);
    }
    __int128 exact = 0;
    for (float v : x) exact += lab::to_fixed(v);
    const double total = lab::fixed_to_double(exact);
    const float naive = kernel_order<Naive>(x, blocks), kahan = kernel_order<Kahan>(x, blocks);
    const float pairwise = pairwise_order(x);
    std::printf("%s total %.9g naive %.9g (error %.4g) pairwise %.9g (error %.4g) compensated %.9g "
                "(error %.4g)\n",
                argv[a], total, naive, std::fabs(naive - total), pairwise,
                std::fabs(pairwise - total), kahan, std::fabs(kahan - total));
  }
  return 0;
}

int search(char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each seed as it is found, cut or not
  const std::uint64_t first = std::strtoull(argv[2], nullptr, 0);
  const std::uint64_t count = std::strtoull(argv[3], nullptr, 0);
  const double window = std::atof(argv[4]);
  std::vector<std::uint64_t> mixed(kN);
  std::vector<signed char> exponent(kN);
  for (std::size_t j = 0; j < kN; ++j) {
    mixed[j] = lab::mix64(j);
    exponent[j] = static_cast<signed char>(-20 + static_cast<int>((40 * j) / (kN - 1)));
  }
  std::atomic<std::uint64_t> next{first};
  auto work = [&] {
    for (std::uint64_t run; (run = next++) < first + count;) {
      const std::uint64_t spec = case_seed(run, kN, 0xba);  // bandwidth_case.cuh's seeds
      // The total in double (close enough to choose by): the shuffle leaves it alone.
      double total = 0;
      for (std::size_t j = 0; j < kN; ++j) {
        const std::uint64_t h = lab::mix64(spec ^ mixed[j]);
        const double m = 1.0 + static_cast<double>(h & 0x7fffff) / 8388608.0;
        total += std::ldexp((h >> 63) ? -m : m, exponent[j]);
      }
      if (std::fabs(total) > 0x1p24 + 0x1p22) continue;  // no plant brings it near 0
      // PlantedCopies' draws: where, then the value, of the sign opposite to
      // the one it replaces (the copy's last plant, or the element).
      const lab::SumInput in{lab::SumPattern::kWideShuffled, spec, kN};
      std::mt19937_64 rng(case_seed(run, kN, 0x91a7));
      std::vector<float> last(kDraws + 1, NAN);
      for (int d = 0; d < kDraws; ++d) {
        const std::size_t copy = d < 2 ? 0 : static_cast<std::size_t>(d - 2);
        const std::size_t at = rng() % kN;
        const float original = in.at(at);
        const float before = std::isnan(last[copy]) ? original : last[copy];
        const float value =
            lab::float_from_parts(!(before < 0), 23, static_cast<std::uint32_t>(rng()));
        last[copy] = value;
        const double planted = total - original + value;
        if (std::fabs(planted) < window)
          std::printf("run seed %llu: call %d, copy %zu: spec seed %llu, %zu:%.9g, total %.6g\n",
                      static_cast<unsigned long long>(run), d + 1, copy,
                      static_cast<unsigned long long>(spec), at, value, planted);
      }
    }
  };
  std::vector<std::thread> pool(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& t : pool) t = std::thread(work);
  for (auto& t : pool) t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "errors") == 0) return errors(argc, argv);
  if (argc == 5 && std::strcmp(argv[1], "search") == 0) return search(argv);
  std::fprintf(stderr,
               "usage: %s errors SM_COUNT SEED[:AT:VALUE]...\n"
               "       %s search FIRST COUNT WINDOW\n",
               argv[0], argv[0]);
  return 2;
}
