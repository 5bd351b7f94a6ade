// Declares the whole test suite of one GPU contract: edge sizes x patterns,
// the empty input, seeded random sizes, two streams at once, two inputs
// taking turns on one workspace, inputs that start off a 16-byte boundary,
// 2^32+ elements, and bandwidth. Test names start with Prefix (Sum..., Max...).
#pragma once

#include "bandwidth_case.cuh"
#include "contract_check.cuh"

#define LAB_CONTRACT_TESTS(Prefix, Traits)                                                       \
  class Prefix##EdgeSizes : public ::testing::TestWithParam<SizeCase<Traits::Pattern>> {};       \
  TEST_P(Prefix##EdgeSizes, MatchesReference) {                                                  \
    check_case<Traits>(GetParam().pattern, GetParam().n);                                        \
  }                                                                                              \
  INSTANTIATE_TEST_SUITE_P(Prefix, Prefix##EdgeSizes, ::testing::ValuesIn(edge_cases<Traits>()), \
                           case_name<Traits::Pattern>);                                          \
  TEST(Prefix##Contract, EmptyInputGivesIdentity) { check_empty<Traits>(); }                     \
  TEST(Prefix##Contract, SeededRandomSizes) { check_random_sizes<Traits>(12); }                  \
  TEST(Prefix##Contract, TwoStreamsAtOnce) { check_two_streams<Traits>(); }                      \
  TEST(Prefix##Contract, InputsTakingTurns) { check_alternating_inputs<Traits>(); }              \
  TEST(Prefix##Contract, UnalignedStarts) { check_unaligned_starts<Traits>(); }                  \
  /* Named to sort last: a wrapped index may fault and lose the CUDA context. */                 \
  TEST(Prefix##ZHuge, Above2To32Elements) { check_huge<Traits>(); }                              \
  TEST(Prefix##Bandwidth, FractionOfCopyCeiling) { check_bandwidth<Traits>(); }
