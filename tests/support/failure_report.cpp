#include "failure_report.hpp"

#include <gtest/gtest.h>

#include "test_env.hpp"

namespace lab::test {

void report(const CaseFailure& f) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const bool first = !::testing::Test::HasFailure();
  std::string where = "n=" + std::to_string(f.n) + ", input " + f.input + ", seed " + hex(f.seed);
  if (!f.variant.empty()) where = f.variant + ": " + where;
  std::string msg = where;
  if (!f.got.empty()) {
    msg += ": expected " + f.expected + ", got " + f.got;
    if (f.call > 0) msg += " (call " + std::to_string(f.call) + ")";
  }
  msg += "\n  hint [" + f.hint + "]: " + f.explain;
  if (first && info != nullptr) {
    ::testing::Test::RecordProperty("fail_n", std::to_string(f.n));
    ::testing::Test::RecordProperty("fail_input", f.input);
    ::testing::Test::RecordProperty("fail_seed", hex(f.seed));
    if (!f.variant.empty()) ::testing::Test::RecordProperty("fail_variant", f.variant);
    ::testing::Test::RecordProperty("fail_expected", f.expected);
    ::testing::Test::RecordProperty("fail_got", f.got);
    ::testing::Test::RecordProperty("fail_call", f.call);
    ::testing::Test::RecordProperty("fail_hint", f.hint);
  }
  ADD_FAILURE() << msg;
}

}  // namespace lab::test
