// What every test binary knows about its run: which lab and implementation it
// tests, the seed, the lab's metadata, and whether performance checks are on.
#pragma once

#include <cstdint>
#include <string>

#include "lab_meta.h"  // generated from grader/labs.toml

namespace lab::test {

struct Identity {
  std::string lab;   // e.g. "04_sequential_addressing"
  std::string impl;  // "labs" (the student's code), "solutions", or a mutant's name
};

void set_identity(Identity id);
const Identity& identity();

// The lab's row of grader/labs.toml; aborts if the lab is not listed there.
const LabMeta& meta();

// Base seed of this run: --seed=N, else $LAB_SEED, else random. main() prints it.
std::uint64_t base_seed();
void set_base_seed(std::uint64_t seed);

// A seed for one case, derived from the base seed and the case's own numbers.
std::uint64_t case_seed(std::uint64_t a, std::uint64_t b = 0);

// Performance tests skip when LAB_SKIP_PERF is set to anything but "0" or "":
// CI and the repository's own test command set it, since timings there mean nothing.
bool perf_disabled();

std::string hex(std::uint64_t v);

}  // namespace lab::test
