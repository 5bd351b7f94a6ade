// The checker's spare device arenas (shared_memory.cpp): a released arena is
// handed out again only where a new one would be the same (its rounded size
// and device), large ones and those other GPUs reach are freed at once, and
// the spares never hold more than kMaxSpareTotal. A test of the harness.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "gpu_test_main.hpp"
#include "shared_memory.hpp"

namespace lab::test {
namespace {

bool live(std::uint32_t id) {
  const auto all = live_arenas();
  return std::any_of(all.begin(), all.end(), [&](const Arena* a) { return a->id == id; });
}

TEST(SpareArenas, SameRoundedSizeIsHandedOutAgain) {
  Arena* first = create_arena(wire::Memory::kDevice, 1000);
  const std::uint32_t id = first->id;
  void* base = first->base;
  const std::size_t bytes = first->bytes;
  release_arena(first);
  EXPECT_TRUE(live(id)) << "a released small arena is kept, still mapped";
  // Another size that rounds to the same granule gets the same arena.
  Arena* again = create_arena(wire::Memory::kDevice, bytes - 7);
  EXPECT_EQ(again->id, id);
  EXPECT_EQ(again->base, base);
  EXPECT_EQ(again->bytes, bytes);
  // One that rounds to more gets a new one, never a smaller or larger spare.
  Arena* larger = create_arena(wire::Memory::kDevice, bytes + 1);
  EXPECT_NE(larger->id, id);
  EXPECT_GT(larger->bytes, bytes);
  release_arena(again);
  Arena* smaller_spare_left = create_arena(wire::Memory::kDevice, bytes + 1);
  EXPECT_NE(smaller_spare_left->id, id) << "a spare of another rounded size was handed out";
  release_arena(larger);
  release_arena(smaller_spare_left);
}

TEST(SpareArenas, TheCallerSeesWhatItWrites) {
  Arena* a = create_arena(wire::Memory::kDevice, 4096);
  ASSERT_EQ(cudaMemset(a->base, 0x11, 4096), cudaSuccess);
  release_arena(a);
  Arena* b = create_arena(wire::Memory::kDevice, 4096);
  ASSERT_EQ(b, a);
  ASSERT_EQ(cudaMemset(b->base, 0x5a, 4096), cudaSuccess);
  std::vector<unsigned char> host(4096);
  ASSERT_EQ(cudaMemcpy(host.data(), b->base, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](unsigned char c) { return c == 0x5a; }));
  release_arena(b);
}

TEST(SpareArenas, LargeArenasAreFreedAtOnce) {
  const std::size_t before = spare_count();
  Arena* big = create_arena(wire::Memory::kDevice, kMaxSpareBytes + 1);
  const std::uint32_t id = big->id;
  release_arena(big);
  EXPECT_FALSE(live(id));
  EXPECT_EQ(spare_count(), before);
}

TEST(SpareArenas, SparesStayUnderTheirCapOldestFreedFirst) {
  const std::size_t count = kMaxSpareTotal / kMaxSpareBytes + 2;
  std::vector<Arena*> made;
  for (std::size_t i = 0; i < count; ++i)
    made.push_back(create_arena(wire::Memory::kDevice, kMaxSpareBytes));
  std::vector<std::uint32_t> ids;
  for (Arena* a : made) ids.push_back(a->id);
  for (Arena* a : made) release_arena(a);
  EXPECT_LE(spare_bytes(), kMaxSpareTotal);
  EXPECT_FALSE(live(ids.front())) << "the oldest spare is freed first";
  EXPECT_TRUE(live(ids.back())) << "the newest spare is kept";
}

TEST(SpareArenas, ArenasOtherGpusReachAreNeverKept) {
  // Lab 12's: other GPUs' work on it ends only with its unmap.
  Arena* shared = create_arena(wire::Memory::kDevice, 4096, 0, 1u);
  const std::uint32_t id = shared->id;
  release_arena(shared);
  EXPECT_FALSE(live(id));
}

TEST(SpareArenas, HostArenasAreNeverKept) {
  Arena* host = create_arena(wire::Memory::kHost, 4096);
  const std::uint32_t id = host->id;
  release_arena(host);
  EXPECT_FALSE(live(id));
}

}  // namespace
}  // namespace lab::test

int main(int argc, char** argv) { return lab::test::run_gpu_tests(argc, argv, "spare arenas"); }
