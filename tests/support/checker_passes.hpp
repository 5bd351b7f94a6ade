// Several passes of tests in one checker process, each against a runner
// started anew under a wrapping of its own: the lab's untimed tests, then
// compute-sanitizer's tools, each of which had a checker of its own. The
// machine serves the start of a process and its CUDA context one at a time
// with every other's (docs/decisions.md, "Fewer process starts"), and a
// correct GPU lab started five checkers: three tools in one checker start one
// where they started three, and the tests in the same one start one where they
// started two.
//
// Each pass is a RUN_ALL_TESTS of its own, with its own --gtest_filter (a
// filter is applied once a run; GoogleTest's repeat would run the same tests
// each time). Before its first test the runner of the pass before has ended
// (with everything it started), its exit is on the result stream, and the new
// runner starts with fresh crash and hang budgets, its own call timeout and
// its own --first-call-only: as if it were a checker of its own, the same
// seed included. With admission pipes the checker asks before each later pass
// starts its runner (checker_admission.hpp, 'n') and again once it is up ('r').
// With later_if_first_passed, the later passes run only when every test of
// the first passed: the tools judge a lab whose tests all pass (a lab that
// failed one has no correctness points to lose).
//
// What tells the passes apart:
//   result stream  {"event":"pass","name":NAME} before the pass's first test,
//                  {"event":"runner_exit","pass":NAME,"how":{...}} after its last;
//   stdout         a line "[checker pass I/N: NAME]" before anything of the
//                  pass; every line of the runner's output is echoed behind
//                  "  | ", so the lab's code cannot print one.
#pragma once

#include <string>
#include <vector>

#include "checker_admission.hpp"

namespace lab::test {

struct RunnerPass {
  std::string name;
  std::vector<std::string> prefix;  // after the --runner-prefix arguments every pass has
  bool first_call_only = false;
  std::string filter;         // --gtest_filter's syntax; "" = the run's
  double call_timeout_s = 0;  // 0 = the run's --call-timeout
  int max_timeouts = 0;       // 0 = the run's --max-timeouts
};

class Passes {
 public:
  // `runner`: the common prefix, then the runner's path last.
  Passes(std::vector<RunnerPass> passes, std::vector<std::string> runner, Admission* admission,
         bool later_if_first_passed);

  // Configures the runner for pass 0 and says so (before the admission's
  // first 'r', so that its runner is the one warmed up).
  void begin_first();

  // Runs every pass (RUN_ALL_TESTS each); 0 when every test of every pass
  // that ran passed, as RUN_ALL_TESTS.
  int run();

 private:
  void begin(std::size_t i);
  void end(std::size_t i);

  std::vector<RunnerPass> passes_;
  std::vector<std::string> runner_;
  Admission* admission_;
  bool later_if_first_passed_;
  std::string run_filter_;
};

}  // namespace lab::test
