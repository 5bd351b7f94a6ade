// Streams each test's result as one JSON line while the checker runs, to a
// file descriptor the grader passes (--result-fd): an unlinked file only the
// grader and the checker hold, which the runner (a separate process, which
// gets none of the checker's descriptors) cannot name, open or write. If the
// checker is killed (a timeout of the whole lab), every finished result is
// still there.
#pragma once

#include <functional>
#include <string>

#include "json.hpp"

namespace lab::test {

// Called after each test; a non-empty answer ends the process (exit code 3)
// once the result is written: the checker's own CUDA context is lost, a fault
// of the machine (the lab's code runs in another process, with its own context).
using AfterTestCheck = std::function<std::string()>;

// Writes the run's results to fd (< 0: nowhere; the check runs either way).
// The listener is installed once, with the first call's check; a later call
// (the next run of a checker that serves several: checker_serve.hpp) closes
// the last run's file and writes to its own.
void install_result_stream(int fd, AfterTestCheck check);
// The run's file closed (and its descriptor); nothing is written until the next install.
void close_result_stream();

// One line of its own, e.g. the run's seed (written before the first test).
void write_stream_event(const std::string& json_object);

using lab::json_string;  // common/json.hpp

}  // namespace lab::test
