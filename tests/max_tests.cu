// Tests of the GPU float-max contract (max_contract.cuh): lab 08.
#include "contract_suite.cuh"

namespace lab::test {
namespace {
LAB_CONTRACT_TESTS(Max, MaxTraits)
}  // namespace
}  // namespace lab::test
