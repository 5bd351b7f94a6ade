#include "checker_passes.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "json.hpp"
#include "result_stream.hpp"
#include "runner_link.hpp"
#include "test_env.hpp"

namespace lab::test {
namespace {

class PassListener : public ::testing::EmptyTestEventListener {
 public:
  PassListener(std::vector<RunnerPass> passes, std::vector<std::string> runner,
               Admission* admission)
      : passes_(std::move(passes)), runner_(std::move(runner)), admission_(admission) {}

  void begin(std::size_t i) {
    const RunnerPass& pass = passes_[i];
    std::printf("[checker pass %zu/%zu: %s]\n", i + 1, passes_.size(), pass.name.c_str());
    std::fflush(stdout);
    write_stream_event("{\"event\":\"pass\",\"name\":" + json_string(pass.name) + "}");
    std::vector<std::string> command = runner_;
    command.insert(command.end() - 1, pass.prefix.begin(), pass.prefix.end());
    RunnerLink::get().restart_as(std::move(command));
    set_first_call_only(pass.first_call_only);
  }

  void OnTestIterationStart(const ::testing::UnitTest&, int iteration) override {
    if (iteration == 0) return;  // begun before the admission (install_passes)
    begin(static_cast<std::size_t>(iteration));
    if (admission_ != nullptr && admission_->asked()) {
      admission_->between_passes();
      RunnerLink::get().warm_up();
      admission_->up();
    }
  }

  void OnTestIterationEnd(const ::testing::UnitTest&, int iteration) override {
    RunnerLink& link = RunnerLink::get();
    link.stop();
    const std::string exit = link.last_exit_json();
    if (exit.empty()) return;  // its runner never started, as in a checker of its own
    write_stream_event("{\"event\":\"runner_exit\",\"pass\":" +
                       json_string(passes_[static_cast<std::size_t>(iteration)].name) +
                       ",\"how\":" + exit + "}");
  }

 private:
  std::vector<RunnerPass> passes_;
  std::vector<std::string> runner_;
  Admission* admission_;
};

}  // namespace

void install_passes(std::vector<RunnerPass> passes, std::vector<std::string> runner,
                    Admission* admission) {
  if (GTEST_FLAG_GET(repeat) != 1) {
    std::fprintf(stderr, "--pass repeats the tests itself: give no --gtest_repeat\n");
    std::exit(2);
  }
  GTEST_FLAG_SET(repeat, static_cast<std::int32_t>(passes.size()));
  auto* listener = new PassListener(std::move(passes), std::move(runner), admission);
  listener->begin(0);
  ::testing::UnitTest::GetInstance()->listeners().Append(listener);
}

}  // namespace lab::test
