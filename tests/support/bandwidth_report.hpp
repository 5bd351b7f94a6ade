// Records a bandwidth measurement as test properties. The test reports the
// figures; the grader judges them against the lab's threshold (labs.toml),
// in one place. A figure that no correct program can reach is flagged here.
#pragma once

#include <string>

#include "bench.hpp"

namespace lab::test {

// Above this fraction of the copy ceiling, or above the memory's theoretical
// bandwidth, a figure cannot come from reading the whole input: the best
// reference reaches 1.03 of the copy (lab 09's int sum on an H200: a stream
// of reads runs a little faster than a copy's reads and writes), the H200's
// theoretical peak is 1.13 of it, and nine batches vary by a few percent.
inline constexpr double kImplausibleFraction = 1.10;

struct BandwidthFigures {
  std::string variant;  // "" for a lab's one function
  std::size_t n = 0;
  BenchResult result;
  double ceiling_gbps = 0.0;  // measured with no student process alive
  double theoretical_gbps = 0.0;
  std::string device;
  bool graded = true;  // false: recorded for the handout, not scored
  // A host copy moves each byte twice (and may allocate on write), so a CPU
  // reading alone legitimately goes faster than it: lab 01's threaded sum
  // reaches 1.05 of the copy on an H200's host. A remembered answer reaches 10^6.
  double implausible_above = kImplausibleFraction;
};

void record_bandwidth(const BandwidthFigures& b);

}  // namespace lab::test
