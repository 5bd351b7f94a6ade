// A checker kept for many runs (--serve=FD): one process, and one CUDA
// context, for every untimed run of one batch worker's labs of its contract.
//
// Why: the machine serves a process's start and its CUDA context one at a
// time with every other's, and with many workers that part is busy most of
// the time, so a lab's tests wait to start (docs/decisions.md, "Fewer process
// starts"). A failing lab started two contexts, a correct one
// seven; a kept checker takes one from each.
//
// The grader (grader/engine/sharing/checker_service.py) sends each run as one message
// on a SOCK_SEQPACKET socket: the run's arguments as a command line would give
// them (without the program's name, --result-fd and --admission-fds), NUL
// after each, and its descriptors: the run's output (stdout and stderr go
// there for the run), its result file, and the admission pipes READY and GO
// when it has them. Once the run has ended, its runner stopped, everything it
// started killed and every arena freed, the checker answers with two ints: the
// run's exit code, and 1 when it will serve another run, else 0 (a process of
// the lab's code outlived its runner, or this process's own CUDA context is
// lost) and it exits. A run that ends the process (a lost context's abort, a
// grader that closes GO, a kill for a timeout) gets no answer: the grader
// reads how the process ended, as for a checker of its own.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lab::test {

struct ServedRun {
  std::vector<std::string> args;
  int result_fd = -1;
  int ready_fd = -1, go_fd = -1;  // -1: the run is admitted by nobody
};

// Why this process must not serve another run ("" when it may).
using FitCheck = std::function<std::string()>;

// Serves runs on `socket` until the grader closes it (0) or a run leaves this
// process unfit (0 after the answer); `run` returns a run's exit code.
int serve(int socket, const std::function<int(const ServedRun&)>& run, const FitCheck& unfit);

}  // namespace lab::test
