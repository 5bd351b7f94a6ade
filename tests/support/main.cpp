// main() of every lab test binary. Compiled once per binary with
//   LAB_ID    the lab, e.g. "04_sequential_addressing"
//   LAB_IMPL  "labs", "solutions" or a mutant's name
//   LAB_NEEDS_GPU  1 for GPU labs
// Prints the seed first, so that any failure can be replayed with --seed=N.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "result_stream.hpp"
#include "test_env.hpp"
#if LAB_NEEDS_GPU
#include "cuda_health.hpp"
#include "device_info.hpp"
#endif

namespace {

std::uint64_t pick_seed(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--seed=", 7) == 0) return std::strtoull(argv[i] + 7, nullptr, 0);
  if (const char* env = std::getenv("LAB_SEED"); env && *env) return std::strtoull(env, nullptr, 0);
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);  // Leaves our own --seed in argv.
  lab::test::set_identity({LAB_ID, LAB_IMPL});
  lab::test::set_base_seed(pick_seed(argc, argv));
  std::printf("[lab %s, %s] seed %llu (replay: --seed=%llu)\n", LAB_ID, LAB_IMPL,
              static_cast<unsigned long long>(lab::test::base_seed()),
              static_cast<unsigned long long>(lab::test::base_seed()));
  std::fflush(stdout);
  ::testing::Test::RecordProperty("seed", std::to_string(lab::test::base_seed()));
  ::testing::Test::RecordProperty("lab", LAB_ID);
  ::testing::Test::RecordProperty("impl", LAB_IMPL);

#if LAB_NEEDS_GPU
  std::string why;
  if (!lab::cuda_device_available(&why)) {
    std::printf("SKIP %s (%s): %s; this lab's tests need an NVIDIA GPU\n", LAB_ID, LAB_IMPL,
                why.c_str());
    return 77;  // The GNU "skipped" exit code: meson reports SKIP, the grader too.
  }
  lab::test::install_result_stream(lab::test::lost_cuda_context);
#else
  lab::test::install_result_stream(nullptr);
#endif
  return RUN_ALL_TESTS();
}
