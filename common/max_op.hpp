// The max the labs compute: IEEE 754-2019 `maximum`. A NaN anywhere gives
// NaN (fmaxf would drop it and return the other operand), and +0.0 counts as
// greater than -0.0 (a plain a > b ? a : b returns whichever zero came second).
#pragma once

#include <cstdint>
#include <cstring>

#include "host_device.hpp"

namespace lab {

LAB_HOST_DEVICE inline std::uint32_t float_bits(float x) {
  std::uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

LAB_HOST_DEVICE inline float max_op(float a, float b) {
  if (a != a) return a;  // NaN is the only value unequal to itself
  if (b != b) return b;
  if (a == b) return (float_bits(a) >> 31) ? b : a;  // equal: prefer the zero without a sign
  return a > b ? a : b;
}

}  // namespace lab
