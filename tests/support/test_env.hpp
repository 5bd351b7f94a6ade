// What every checker knows about its run: which lab and implementation it
// tests, the seed, whether performance checks are on, and the copy ceiling.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace lab::test {

struct Identity {
  std::string lab;   // e.g. "04_sequential_addressing"
  std::string impl;  // "labs" (the student's code), "solutions", or a mutant's name
};

void set_identity(Identity id);
const Identity& identity();

// Base seed of this run: the grader passes --seed=N and records it; else random.
std::uint64_t base_seed();
void set_base_seed(std::uint64_t seed);

// A seed for one case, derived from the base seed and the case's own numbers.
std::uint64_t case_seed(std::uint64_t a, std::uint64_t b = 0);

// Performance tests skip when LAB_SKIP_PERF is set to anything but "0" or "":
// CI and the repository's own test command set it, since timings there mean nothing.
bool perf_disabled();

// The copy ceiling the bandwidth tests divide by: the value the grader
// measured before any student's code ran (--ceiling-gbps), or else measured
// here once, after the runner and everything it started has been stopped.
void set_given_ceiling_gbps(double gbps);
double ceiling_gbps(const std::function<double()>& measure);

// A compute-sanitizer run (--first-call-only, grader/engine/sanitize.py):
// each case makes its first call only. The tool would see the same kernels
// again on calls 2 to 4, which differ from the first only in what *out holds
// before the call and in one element of the input; under racecheck a call
// costs many times the case's checks, so the three repeats were most of the
// tool's time on the GPU (docs/decisions.md, "Under racecheck each case makes
// its first call only"). What the repeats check (an output not reset, state left in
// the workspace, a remembered answer) the tests' own run checks.
bool first_call_only();
void set_first_call_only(bool on);

std::string hex(std::uint64_t v);

}  // namespace lab::test
