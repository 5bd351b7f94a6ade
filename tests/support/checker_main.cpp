// main() of a checker: the trusted half of every lab's tests. It links no
// lab code; the lab's code runs in a runner process (runner_link.hpp) that
// the checker starts, feeds and judges. Compiled once per contract kind with
//   LAB_NEEDS_GPU  1 for the GPU contracts
//
// usage: checker-<kind> --lab=ID --runner=PATH [--runner-prefix=ARG]... [--impl=NAME]
//            [--runner-user=nobody] [--runner-workdir=DIR] [--call-timeout=S]
//            [--max-timeouts=N] [--seed=N] [--result-fd=N] [--ceiling-gbps=X]
//            [--admission-fds=READY,GO] [--first-call-only]
//            [--pass=NAME [--pass-prefix=ARG]... [--pass-first-call-only] [--pass-filter=F]
//                         [--pass-call-timeout=S] [--pass-max-timeouts=N]]...
//            [--later-passes-if-first-passed] [gtest flags]
//        checker-<kind> --measure-ceiling      the copy ceiling as JSON, nothing else
//        checker-<kind> --serve=FD             runs as the grader asks on socket FD, each
//                                              with the options above (checker_serve.hpp)
//
// --runner-prefix arguments (a sandbox, a PID namespace) come before the
// runner's path in its command line, in order. The seed is printed first, so
// any failure can be replayed with --seed=N.
//
// --max-timeouts: hung calls (each stopped at --call-timeout) after which the
// rest is not run; 2 by default. A batch sharing the GPU passes 1: its first
// hang has already cost the lab every correctness point, and a spinning
// kernel slows every other run on the GPU while it lasts.
//
// --first-call-only: each case makes its first call only; what the grader
// passes under compute-sanitizer's racecheck (test_env.hpp says why).
//
// --admission-fds: a batch sharing the GPU gives each run one of a few slots
// (grader/engine/sharing/admission.py). The checker makes its context and starts its
// runner first, then writes one byte on READY and waits for one on GO: the
// slot is not held while processes start, which is about half of a run
// (checker_admission.hpp).
//
// --pass: the tests run once per pass, each against a runner started anew
// with the pass's --pass-prefix arguments after the --runner-prefix ones
// (the untimed tests and compute-sanitizer's tools in one checker:
// checker_passes.hpp says why). --pass-filter (the pass's tests, else the
// run's --gtest_filter), --pass-call-timeout, --pass-max-timeouts (else the
// run's) and --pass-first-call-only belong to the --pass before them.
// --later-passes-if-first-passed: the passes after the first run only when
// every test of the first passed.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "checker_admission.hpp"
#include "checker_passes.hpp"
#include "checker_serve.hpp"
#include "measure_ceiling.hpp"
#include "result_stream.hpp"
#include "runner_link.hpp"
#include "test_env.hpp"
#if LAB_NEEDS_GPU
#include "cuda_health.hpp"
#include "device_info.hpp"
#endif

namespace {

struct Args {
  std::string lab, impl = "labs", runner, user, workdir;
  std::vector<std::string> prefix;
  std::vector<lab::test::RunnerPass> passes;
  double call_timeout = 30.0, ceiling = 0.0;
  bool seeded = false, measure_ceiling = false, first_call_only = false;
  bool later_if_first_passed = false;
  std::uint64_t seed = 0;
  int result_fd = -1, ready_fd = -1, go_fd = -1, max_timeouts = 2, serve_fd = -1;
  std::string filter;  // a served run's --gtest_filter ("" = every test)
  std::size_t output_cap = 8u << 20;
};

bool take(const char* arg, const char* flag, std::string* value) {
  const std::size_t n = std::strlen(flag);
  if (std::strncmp(arg, flag, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

// --pass-prefix=ARG, --pass-first-call-only, --pass-filter=F,
// --pass-call-timeout=S, --pass-max-timeouts=N: of the --pass before it.
void pass_option(const char* arg, std::vector<lab::test::RunnerPass>* passes) {
  if (passes->empty()) {
    std::fprintf(stderr, "%s belongs to a --pass before it\n", arg);
    std::exit(2);
  }
  lab::test::RunnerPass& pass = passes->back();
  std::string v;
  if (take(arg, "--pass-prefix", &v)) {
    pass.prefix.push_back(v);
  } else if (std::strcmp(arg, "--pass-first-call-only") == 0) {
    pass.first_call_only = true;
  } else if (take(arg, "--pass-filter", &pass.filter)) {
  } else if (take(arg, "--pass-call-timeout", &v)) {
    pass.call_timeout_s = std::atof(v.c_str());
  } else if (take(arg, "--pass-max-timeouts", &v)) {
    pass.max_timeouts = std::max(1, std::atoi(v.c_str()));
  } else {
    std::fprintf(stderr, "unknown argument %s\n", arg);
    std::exit(2);
  }
}

Args parse(int argc, const char* const* argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    // A served run's; InitGoogleTest has taken a command line's before.
    if (take(argv[i], "--gtest_filter", &a.filter)) continue;
    if (take(argv[i], "--lab", &a.lab) || take(argv[i], "--impl", &a.impl) ||
        take(argv[i], "--runner", &a.runner) || take(argv[i], "--runner-user", &a.user) ||
        take(argv[i], "--runner-workdir", &a.workdir)) {
    } else if (take(argv[i], "--runner-prefix", &v)) {
      a.prefix.push_back(v);
    } else if (take(argv[i], "--pass", &v)) {
      a.passes.push_back({v, {}, false});
    } else if (std::strncmp(argv[i], "--pass-", 7) == 0) {
      pass_option(argv[i], &a.passes);
    } else if (std::strcmp(argv[i], "--later-passes-if-first-passed") == 0) {
      a.later_if_first_passed = true;
    } else if (take(argv[i], "--seed", &v)) {
      a.seed = std::strtoull(v.c_str(), nullptr, 0);
      a.seeded = true;
    } else if (take(argv[i], "--serve", &v)) {
      a.serve_fd = std::atoi(v.c_str());
    } else if (take(argv[i], "--result-fd", &v)) {
      a.result_fd = std::atoi(v.c_str());
    } else if (take(argv[i], "--admission-fds", &v)) {
      if (std::sscanf(v.c_str(), "%d,%d", &a.ready_fd, &a.go_fd) != 2 || a.ready_fd < 0 ||
          a.go_fd < 0) {
        std::fprintf(stderr, "--admission-fds takes READY,GO, not %s\n", v.c_str());
        std::exit(2);
      }
    } else if (take(argv[i], "--call-timeout", &v)) {
      a.call_timeout = std::atof(v.c_str());
    } else if (take(argv[i], "--max-timeouts", &v)) {
      a.max_timeouts = std::max(1, std::atoi(v.c_str()));
    } else if (take(argv[i], "--ceiling-gbps", &v)) {
      a.ceiling = std::atof(v.c_str());
    } else if (take(argv[i], "--output-cap", &v)) {
      a.output_cap = static_cast<std::size_t>(std::strtoull(v.c_str(), nullptr, 0));
    } else if (std::strcmp(argv[i], "--measure-ceiling") == 0) {
      a.measure_ceiling = true;
    } else if (std::strcmp(argv[i], "--first-call-only") == 0) {
      a.first_call_only = true;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      std::exit(2);
    }
  }
  return a;
}

// Up (context made, runner started): say so, and wait for the GPU slot.
void wait_for_admission(lab::test::Admission* admission) {
#if LAB_NEEDS_GPU
  // Else the first test makes it, inside the slot (or the GPU held alone).
  lab::make_context();
#endif
  lab::test::RunnerLink::get().warm_up();
  admission->up();
}

std::uint64_t random_seed() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

// The tests of one run against its runner; its exit code, as RUN_ALL_TESTS's.
int run_tests(const Args& args) {
  lab::test::Admission admission;
  if (args.ready_fd >= 0) admission = lab::test::Admission(args.ready_fd, args.go_fd);
  if (args.lab.empty() || args.runner.empty()) {
    std::fprintf(stderr, "usage: checker --lab=ID --runner=PATH [options]; see checker_main.cpp\n");
    admission.close();
    return 2;
  }
  lab::test::set_identity({args.lab, args.impl});
  lab::test::set_base_seed(args.seeded ? args.seed : random_seed());
  lab::test::set_given_ceiling_gbps(args.ceiling);
  lab::test::set_first_call_only(args.first_call_only);
  const auto seed = static_cast<unsigned long long>(lab::test::base_seed());
  std::printf("[lab %s, %s] seed %llu (replay: --seed=%llu)\n", args.lab.c_str(), args.impl.c_str(),
              seed, seed);
  std::fflush(stdout);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  ::testing::Test::RecordProperty("lab", args.lab);
  ::testing::Test::RecordProperty("impl", args.impl);

  lab::test::RunnerOptions options;
  options.command = args.prefix;
  options.command.push_back(args.runner);
  options.workdir = args.workdir;
  options.user = args.user;
  options.call_timeout_s = args.call_timeout;
  options.max_timeouts = args.max_timeouts;
  options.output_cap = args.output_cap;
  lab::test::RunnerLink::configure(options);

#if LAB_NEEDS_GPU
  lab::test::install_result_stream(args.result_fd, [] {
    const std::string lost = lab::test::lost_cuda_context();
    return lost.empty() ? lost
                        : "the checker's own CUDA context failed (a fault of the machine, "
                          "not of the lab's code): " +
                              lost;
  });
#else
  lab::test::install_result_stream(args.result_fd, nullptr);
#endif
  lab::test::write_stream_event("{\"event\":\"run\",\"seed\":\"" + std::to_string(seed) +
                                "\",\"lab\":" + lab::test::json_string(args.lab) +
                                ",\"impl\":" + lab::test::json_string(args.impl) + "}");
  if (!args.passes.empty()) {
    // The passes end their runners themselves, each with its runner_exit event.
    lab::test::Passes passes(args.passes, options.command, &admission, args.later_if_first_passed);
    passes.begin_first();
    if (admission.asked()) wait_for_admission(&admission);
    if (args.passes.size() < 2) admission.close();
    return passes.run();
  }
  // Lab 01's checker speaks it too, so that CI tests it (tests/admission_check.py).
  if (admission.asked()) wait_for_admission(&admission);
  admission.close();
  const int rc = RUN_ALL_TESTS();
  lab::test::RunnerLink::get().stop();
  const std::string exit = lab::test::RunnerLink::get().last_exit_json();
  if (!exit.empty())
    lab::test::write_stream_event("{\"event\":\"runner_exit\",\"how\":" + exit + "}");
  return rc;
}

// A served run: its arguments parsed as a command line's, its descriptors its own.
int run_served(const lab::test::ServedRun& served) {
  std::vector<const char*> argv{"checker"};
  for (const std::string& a : served.args) argv.push_back(a.c_str());
  Args args = parse(static_cast<int>(argv.size()), argv.data());
  args.result_fd = served.result_fd;
  args.ready_fd = served.ready_fd;
  args.go_fd = served.go_fd;
  GTEST_FLAG_SET(filter, args.filter.empty() ? std::string("*") : args.filter);
  return run_tests(args);
}

}  // namespace

int main(int argc, char** argv) {
  // No process of the same user may ptrace this one or open /proc/PID/mem.
  prctl(PR_SET_DUMPABLE, 0);
  // Whatever the runner leaves behind is re-parented here, to be killed.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::testing::InitGoogleTest(&argc, argv);  // leaves our own flags in argv
  const Args args = parse(argc, argv);
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();  // needs no GPU and no runner
#if LAB_NEEDS_GPU
  lab::test::wait_for_gpu_as_asked();  // before the first call that makes the context
  std::string why;
  if (!lab::cuda_device_available(&why)) {
    std::printf("SKIP %s (%s): %s; this lab's tests need an NVIDIA GPU\n", args.lab.c_str(),
                args.impl.c_str(), why.c_str());
    return 77;  // The GNU "skipped" exit code: meson reports SKIP.
  }
#endif
  if (args.measure_ceiling) {
    std::printf("%s\n", lab::test::measure_ceiling_json().c_str());
    return 0;
  }
  if (args.serve_fd >= 0) {
#if LAB_NEEDS_GPU
    lab::make_context();  // once, for every run it serves
    const lab::test::FitCheck unfit = [] { return lab::test::lost_cuda_context(); };
#else
    const lab::test::FitCheck unfit = [] { return std::string(); };
#endif
    return lab::test::serve(args.serve_fd, run_served, unfit);
  }
  return run_tests(args);
}
