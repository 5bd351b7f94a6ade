// One way for every correctness test to report a failing case, so that the
// grader can read it from the gtest JSON (test properties) instead of parsing
// printed text, and a student reads the same facts in the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lab::test {

// Stable names the grader turns into hints; tests pick the most specific.
// RunnerError adds its own: crashed, timed_out, cuda_error, exception,
// output_limit, runner_error, not_run (runner_link.hpp).
namespace hint {
inline constexpr const char* kNotImplemented = "not_implemented";
inline constexpr const char* kNeverWritten = "never_written";
inline constexpr const char* kReadPastEnd = "read_past_end";
inline constexpr const char* kReadBeforeStart = "read_before_start";
inline constexpr const char* kNotReset = "not_reset";
inline constexpr const char* kDiffersBetweenCalls = "differs_between_calls";
inline constexpr const char* kInputModified = "input_modified";
inline constexpr const char* kCudaError = "cuda_error";
inline constexpr const char* kWrongValue = "wrong_value";
inline constexpr const char* kWrongIdentity = "wrong_identity";
inline constexpr const char* kSharedState = "shared_state";
inline constexpr const char* kInaccurate = "inaccurate";
inline constexpr const char* kStaleResult = "stale_result";
inline constexpr const char* kWorkspaceNotReady = "workspace_not_ready";
// The checker's own failure (its CUDA context, its memory): the grader's
// fault, never scored as the student's.
inline constexpr const char* kCheckerError = "checker_error";
}  // namespace hint

struct CaseFailure {
  std::size_t n = 0;
  std::string input;  // pattern name, e.g. "random"
  std::uint64_t seed = 0;
  std::string variant;  // which function or configuration, when a lab has several
  std::string expected;
  std::string got;
  int call = 0;         // 1-based call that first went wrong (0: not a call)
  std::string hint;     // one of hint::*
  std::string explain;  // one sentence for the student
};

// Adds a gtest failure with a readable message and, for the first failure of a
// test, records the case as test properties (fail_n, fail_input, ...).
void report(const CaseFailure& f);

}  // namespace lab::test
