// Tests of the GPU int-sum contract (sum_contract.cuh): labs 02-07 and 09.
#include "contract_suite.cuh"

namespace lab::test {
namespace {
LAB_CONTRACT_TESTS(Sum, SumTraits)
}  // namespace
}  // namespace lab::test
