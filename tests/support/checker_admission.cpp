#include "checker_admission.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace lab::test {

Admission::Admission(int ready_fd, int go_fd) : ready_fd_(ready_fd), go_fd_(go_fd) {
  // Neither may reach a process this one starts (the runner closes them anyway).
  fcntl(ready_fd_, F_SETFD, FD_CLOEXEC);
  fcntl(go_fd_, F_SETFD, FD_CLOEXEC);
}

void Admission::say_and_wait(char byte) {
  if (!asked()) return;
  ssize_t n;
  do {
    n = write(ready_fd_, &byte, 1);
  } while (n < 0 && errno == EINTR);
  char answer = 0;
  do {
    n = read(go_fd_, &answer, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) {
    // The grader is gone or stopping this run: nothing may start or run unasked.
    std::fprintf(stderr, "the grader did not admit this run to the GPU\n");
    std::exit(4);
  }
}

void Admission::close() {
  if (!asked()) return;
  ::close(ready_fd_);
  ::close(go_fd_);
  ready_fd_ = go_fd_ = -1;
}

}  // namespace lab::test
