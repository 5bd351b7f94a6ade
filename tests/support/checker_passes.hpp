// The same tests run several times in one checker process, each pass against
// a runner started anew under a wrapping of its own: compute-sanitizer's
// tools, each of which had a checker of its own. The machine serves the start
// of a process and its CUDA context one at a time with every other's
// (tests/gpu_runs/README.md, context-probe-*), and a correct GPU lab started
// five checkers: three tools in one checker start one where they started three.
//
// Pass i is GoogleTest's repeat i. Before its first test the runner of the
// pass before has ended (with everything it started), its exit is on the
// result stream, and the new runner starts with fresh crash and hang budgets
// and its own --first-call-only: as if it were a checker of its own, the same
// seed included. With admission pipes the checker asks before each later pass
// starts its runner (checker_admission.hpp, 'n') and again once it is up ('r').
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
};

// Configures the runner for pass 0, says so, and has RUN_ALL_TESTS run once
// per pass. `runner`: the common prefix, then the runner's path last.
void install_passes(std::vector<RunnerPass> passes, std::vector<std::string> runner,
                    Admission* admission);

}  // namespace lab::test
