#include "checker_passes.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "json.hpp"
#include "result_stream.hpp"
#include "runner_link.hpp"
#include "test_env.hpp"

namespace lab::test {

Passes::Passes(std::vector<RunnerPass> passes, std::vector<std::string> runner,
               Admission* admission, bool later_if_first_passed)
    : passes_(std::move(passes)), runner_(std::move(runner)), admission_(admission),
      later_if_first_passed_(later_if_first_passed), run_filter_(GTEST_FLAG_GET(filter)) {
  if (GTEST_FLAG_GET(repeat) != 1) {
    std::fprintf(stderr, "--pass runs the tests once a pass: give no --gtest_repeat\n");
    std::exit(2);
  }
}

void Passes::begin_first() { begin(0); }

void Passes::begin(std::size_t i) {
  const RunnerPass& pass = passes_[i];
  std::printf("[checker pass %zu/%zu: %s]\n", i + 1, passes_.size(), pass.name.c_str());
  std::fflush(stdout);
  write_stream_event("{\"event\":\"pass\",\"name\":" + json_string(pass.name) + "}");
  std::vector<std::string> command = runner_;
  command.insert(command.end() - 1, pass.prefix.begin(), pass.prefix.end());
  RunnerLink::get().restart_as(std::move(command), pass.call_timeout_s, pass.max_timeouts);
  set_first_call_only(pass.first_call_only);
  GTEST_FLAG_SET(filter, pass.filter.empty() ? run_filter_ : pass.filter);
}

void Passes::end(std::size_t i) {
  RunnerLink& link = RunnerLink::get();
  link.stop();
  const std::string exit = link.last_exit_json();
  if (exit.empty()) return;  // its runner never started, as in a checker of its own
  write_stream_event("{\"event\":\"runner_exit\",\"pass\":" + json_string(passes_[i].name) +
                     ",\"how\":" + exit + "}");
}

int Passes::run() {
  int rc = 0;
  bool first_failed = false;
  for (std::size_t i = 0; i < passes_.size(); ++i) {
    if (i > 0) {
      if (later_if_first_passed_ && first_failed) {
        // Not a pass line: "[checker passes" is not "[checker pass I/N".
        std::printf("[checker passes end after %s: a test of it failed]\n",
                    passes_[0].name.c_str());
        break;
      }
      begin(i);
      if (admission_ != nullptr && admission_->asked()) {
        // 'n' says nothing of the lab's code is alive: a timed run of another
        // student may take the GPU next. A process that outlived its runner
        // (a fork chain faster than the kills, without a PID namespace) keeps
        // the run where it is, on the GPU's shared side, until the checker ends.
        if (kill_all_children()) {
          admission_->between_passes();
          RunnerLink::get().warm_up();
          admission_->up();
        } else {
          std::printf("[checker: a process of the pass before outlived it; no pause]\n");
          std::fflush(stdout);
        }
      }
    }
    // Each pass a run of its own: GoogleTest filters the tests once a run.
    const int pass_rc = RUN_ALL_TESTS();
    if (i == 0) first_failed = pass_rc != 0;
    rc |= pass_rc;  // a later pass's failure stops nothing: its tool's verdict is its own
    end(i);
  }
  if (admission_ != nullptr) admission_->close();
  return rc;
}

}  // namespace lab::test
