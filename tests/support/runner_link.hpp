// The checker's side of the checker/runner split. The runner is a separate
// process holding the lab's code; the checker (this process) starts it, lends
// it shared memory, asks it to run calls, and times and judges them itself.
// Nothing the runner prints, writes or exits with is read as a result.
//
// Containment the checker does on its own (the grader may add a sandbox or a
// PID namespace in front of the runner's command):
//   - the runner runs in a session of its own, with only stdin (/dev/null),
//     stdout/stderr (a pipe the checker drains, capped) and the socket open;
//   - as `nobody` when the checker runs as root (--runner-user);
//   - with no core dumps and a cap on the size of any file it writes;
//   - it dies with the checker (PR_SET_PDEATHSIG), and the checker is the
//     subreaper of everything it starts: whatever outlives the runner is killed
//     when the runner ends;
//   - the checker itself is not dumpable, so a process of the same user can
//     neither ptrace it nor read or write /proc/PID/mem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "call_spec.hpp"

namespace lab::test {

struct RunnerOptions {
  std::vector<std::string> command;   // a wrapper's arguments (if any), then the runner
  std::string workdir;                // its cwd, HOME and TMPDIR; "" = a fresh private folder
  std::string user;                   // "nobody" to drop to that user (the checker must be root)
  double call_timeout_s = 30.0;       // one request: a hang costs this long
  double start_timeout_s = 120.0;     // the first answer (its CUDA context; longer under tools)
  std::size_t output_cap = 8u << 20;  // bytes of stdout+stderr, and of any one file it writes
  std::size_t echo_cap = 32u << 10;   // bytes of its output shown in the checker's log
  int max_crashes = 8;                // crashes and lost CUDA contexts; then the rest is not run
  int max_timeouts = 2;
};

// A request the runner did not answer as asked. hint() is the name the tests
// report (failure_report.hpp): crashed, timed_out, cuda_error, exception,
// output_limit, runner_error or not_run.
class RunnerError : public std::runtime_error {
 public:
  RunnerError(std::string hint, const std::string& what)
      : std::runtime_error(what), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

class RunnerLink {
 public:
  // Called by the checker before a run's first test (once a run where one
  // checker serves several: checker_serve.hpp); ends any runner of a run before.
  static void configure(RunnerOptions options);
  static RunnerLink& get();

  // Workspace bytes the lab's code asks for; more than the contract allows
  // (max_bytes) is a RunnerError.
  std::size_t workspace_bytes(Fn fn, std::uint32_t arg, std::size_t n, std::size_t max_bytes);

  // Runs the calls in order (calls on different streams may overlap) and
  // returns once all are finished. Throws lab::NotImplemented when a TODO was
  // reached, RunnerError for anything else that went wrong.
  void run(const std::vector<Invocation>& calls);

  // Ends the runner and everything it started; the next request starts a new one.
  void stop();

  // Ends the runner (stop), and the next one starts with `command`, its crash
  // and hang budgets whole again, and a call timeout and hang budget of its
  // own (0: the configured ones): a checker pass of its own (checker_passes.hpp).
  void restart_as(std::vector<std::string> command, double call_timeout_s, int max_timeouts);

  // Starts the runner before the first test, so that its start (its CUDA
  // context, a sandbox, a tool's hooks) is over before the checker takes its
  // GPU slot (checker_main.cpp). A start that fails leaves no trace: the first
  // test starts it again and reports what went wrong, as without this.
  void warm_up();

  // Seconds the last runner took to say it was up (reported, not judged).
  double last_start_seconds() const { return start_seconds_; }

  // How the last runner ended when stop() asked it to: under compute-sanitizer
  // the tool's exit code says whether it found anything. Empty before any.
  std::string last_exit_json() const { return last_exit_; }

 private:
  RunnerLink() = default;
  struct Process;
  void start();
  void introduce(int fd_to_send, const void* request);
  void send_arena(const struct Arena& arena);
  void drop_arena(std::uint32_t id);
  void request(void* request, int fd, void* reply, double timeout_s);
  [[noreturn]] void died(const std::string& during);
  // One crash or lost CUDA context against max_crashes; `why` once it is spent.
  void count_crash(const std::string& why);
  // count_crash for a runner that died or lost its context, in the words both share.
  void count_crash_or_lost_context();
  void reap(bool kill_first);
  // A new command (configure, restart_as): its runner starts with every budget whole.
  void begin_command();

  RunnerOptions options_;
  bool configured_ = false;
  std::string broken_;  // why no more calls are made
  int crashes_ = 0;
  int timeouts_ = 0;
  std::uint64_t seq_ = 0;
  double start_seconds_ = 0.0;
  Process* process_ = nullptr;
  std::string own_workdir_;
  std::string last_exit_;
  double base_call_timeout_s_ = 0;  // configure()'s, once a pass has set its own
  int base_max_timeouts_ = 0;
};

// Kills every child process of this one (they are re-parented here when the
// runner dies, since the checker is a subreaper) and waits for them. False
// when some were still there after 200 rounds (about a second): a chain that
// forks faster than it is killed, where the runner has no PID namespace.
bool kill_all_children();

}  // namespace lab::test
