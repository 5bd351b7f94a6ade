#include "result_stream.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lab::test {

namespace {

std::FILE* g_file = nullptr;  // the grader's result file of the run in progress

std::string full_name(const ::testing::TestInfo& t) {
  return std::string(t.test_suite_name()) + "." + t.name();
}

class ResultStream : public ::testing::EmptyTestEventListener {
 public:
  explicit ResultStream(AfterTestCheck check) : check_(std::move(check)) {}

  void OnTestStart(const ::testing::TestInfo& t) override {
    write("{\"event\":\"start\",\"test\":" + json_string(full_name(t)) + "}");
  }

  void OnTestEnd(const ::testing::TestInfo& t) override {
    const ::testing::TestResult& r = *t.result();
    const char* outcome = r.Skipped() ? "skipped" : r.Failed() ? "failed" : "passed";
    std::string line = "{\"event\":\"end\",\"test\":" + json_string(full_name(t)) +
                       ",\"result\":\"" + outcome +
                       "\",\"time_ms\":" + std::to_string(r.elapsed_time()) + ",\"properties\":{";
    for (int i = 0; i < r.test_property_count(); ++i) {
      const ::testing::TestProperty& p = r.GetTestProperty(i);
      line += (i ? "," : "") + json_string(p.key()) + ":" + json_string(p.value());
    }
    line += "},\"failures\":[";
    bool first = true;
    for (int i = 0; i < r.total_part_count(); ++i) {
      const ::testing::TestPartResult& part = r.GetTestPartResult(i);
      if (!part.failed()) continue;
      line += (first ? "" : ",") + json_string(part.message());
      first = false;
    }
    write(line + "]}");
    const std::string abort_reason = check_ ? check_() : std::string();
    if (!abort_reason.empty()) {
      write("{\"event\":\"abort\",\"after\":" + json_string(full_name(t)) +
            ",\"reason\":" + json_string(abort_reason) + "}");
      std::fprintf(stderr, "\nABORT after %s: %s\n", full_name(t).c_str(), abort_reason.c_str());
      std::fflush(stderr);
      std::_Exit(3);
    }
  }

 private:
  // A result that cannot be written (a full TMPDIR, where the grader keeps
  // the file) ends the checker with the machine's words, exit code 3: a fault
  // of the machine, never a test the lab's code failed.
  void write(const std::string& line) {
    if (!g_file) return;
    if (std::fputs((line + "\n").c_str(), g_file) < 0 || std::fflush(g_file) != 0) {
      std::fprintf(stderr, "\nABORT: the checker cannot write its results: %s\n",
                   std::strerror(errno));
      std::fflush(stderr);
      std::_Exit(3);
    }
  }
  AfterTestCheck check_;
};

ResultStream* g_listener = nullptr;

}  // namespace

void install_result_stream(int fd, AfterTestCheck check) {
  close_result_stream();
  if (fd >= 0) {
    g_file = fdopen(fd, "a");
    if (!g_file) std::fprintf(stderr, "cannot write results to file descriptor %d\n", fd);
  }
  if (g_listener == nullptr) {
    g_listener = new ResultStream(std::move(check));
    ::testing::UnitTest::GetInstance()->listeners().Append(g_listener);
  }
}

void close_result_stream() {
  if (g_file != nullptr) std::fclose(g_file);
  g_file = nullptr;
}

void write_stream_event(const std::string& json_object) {
  if (!g_file) return;
  std::fputs((json_object + "\n").c_str(), g_file);
  std::fflush(g_file);
}

}  // namespace lab::test
