// Sizes every sum lab is tested at (DESIGN.md): edges of warps, blocks and
// two-element blocks, powers of two and their neighbours, a large prime.
#pragma once

#include <cstddef>
#include <vector>

namespace lab::test {

inline const std::vector<std::size_t>& edge_sizes() {
  static const std::vector<std::size_t> sizes = {
      1,    2,    31,   32,   33,        255,       256,       257,        511,
      512,  513,  1000, 1023, 1024,      1025,      2049,      4097,       65537,
      1u << 20, (1u << 20) + 1, 10000000, 16777213 /* largest prime below 2^24 */};
  return sizes;
}

// Above 2^32 elements: a 32-bit index (int or unsigned) wraps for some thread.
inline constexpr std::size_t kHugeSize = (std::size_t{1} << 32) + (std::size_t{1} << 20) + 7;

}  // namespace lab::test
