// Streams each test's result as one JSON line while the binary runs
// ($LAB_RESULT_STREAM names the file). gtest writes its JSON report only at
// exit; a kernel that crashes the process or hangs until a timeout would take
// every earlier result with it. With the stream the grader keeps them, knows
// which test was running, and resumes after it.
#pragma once

#include <functional>
#include <string>

namespace lab::test {

// Called after each test; a non-empty answer ends the process (exit code 3)
// once the result is written, e.g. when the CUDA context is lost and every
// later test would fail for that reason alone.
using AfterTestCheck = std::function<std::string()>;

// Installs the listener if $LAB_RESULT_STREAM is set; the check runs either way.
void install_result_stream(AfterTestCheck check);

}  // namespace lab::test
