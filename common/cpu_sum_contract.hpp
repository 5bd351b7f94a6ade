// The contract of lab 01 (CPU baseline): three ways to sum on the host.
// Each returns the sum of in[0, n) and leaves the input unchanged; n == 0 gives 0.
#pragma once

#include <cstddef>

// One loop, one thread.
int sum_sequential(const int* in, std::size_t n);

// Pairwise halving (the CPU form of the GPU tree): `scratch` holds n ints the
// function may overwrite; it is nullptr when n == 0.
int sum_pairwise(const int* in, std::size_t n, int* scratch);

// `threads` std::threads (1 or more) each sum a slice; the slices are added.
int sum_threads(const int* in, std::size_t n, unsigned threads);
