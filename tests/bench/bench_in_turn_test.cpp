// The routine that times the floor beside the calls it bounds
// (lab::bench_in_turn), on fake clocks: no GPU, no real time. Every call is
// timed in batches of one length (the slowest call's), the calls take turns
// round by round, and each result is its call's best round.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"

namespace {

// A fake clock: `cost_ms` per call, plus `extra_ms` on the batches of round
// `slow_round` (counted from 0; warm-up and sizing calls are not a round).
struct FakeCall {
  double cost_ms;
  std::vector<int>* batch_lengths;
  std::string name;
  std::vector<std::string>* order;
  int slow_round = -1;
  double extra_ms = 0.0;
  int batches = 0;

  double operator()(long, int count) {
    if (count == 1 && batches < 2) {  // warm-up, then the call that sizes the batches
      ++batches;
      return cost_ms;
    }
    const int round = (batches++ - 2) / lab::BenchConfig{}.samples;
    batch_lengths->push_back(count);
    if (order->empty() || order->back() != name) order->push_back(name);
    return count * cost_ms + (round == slow_round ? extra_ms * count : 0.0);
  }
};

TEST(BenchInTurn, OneBatchLengthTheSlowestCallsRoundsInTurnBestRoundKept) {
  std::vector<int> lengths;
  std::vector<std::string> order;
  FakeCall floor{0.004, &lengths, "floor", &order};
  FakeCall lab{0.005, &lengths, "lab", &order, /*slow_round=*/0, /*extra_ms=*/0.002};
  FakeCall cub{0.010, &lengths, "cub", &order};
  const std::vector<lab::TimeCalls> calls = {std::ref(floor), std::ref(lab), std::ref(cub)};
  const std::vector<lab::BenchResult> r = lab::bench_in_turn(calls, 1024, 3);

  ASSERT_EQ(r.size(), 3u);
  // 5 ms batches of the slowest call (0.010 ms a call): 500 calls, for all three.
  for (const int n : lengths) EXPECT_EQ(n, 500);
  for (const auto& x : r) EXPECT_EQ(x.calls_per_batch, 500);
  const std::vector<std::string> turns = {"floor", "lab",   "cub", "floor", "lab",
                                          "cub",   "floor", "lab", "cub"};
  EXPECT_EQ(order, turns);
  EXPECT_DOUBLE_EQ(r[0].median_ms, 0.004);
  EXPECT_DOUBLE_EQ(r[1].median_ms, 0.005);  // its slow first round is not the figure kept
  EXPECT_DOUBLE_EQ(r[1].max_ms, 0.007);     // but its slowest batch is still reported
  EXPECT_DOUBLE_EQ(r[2].median_ms, 0.010);
  EXPECT_EQ(r[1].bytes_per_call, 1024u);
}

TEST(BenchInTurn, AFixedBatchLengthIsKept) {
  std::vector<int> lengths;
  std::vector<std::string> order;
  FakeCall a{0.004, &lengths, "a", &order}, b{0.5, &lengths, "b", &order};
  lab::BenchConfig config;
  config.calls_per_batch = 7;
  lab::bench_in_turn({std::ref(a), std::ref(b)}, 0, 2, config);
  for (const int n : lengths) EXPECT_EQ(n, 7);
  EXPECT_EQ(lengths.size(), 2u * 2u * static_cast<std::size_t>(config.samples));
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
