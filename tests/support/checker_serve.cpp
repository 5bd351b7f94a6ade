#include "checker_serve.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "result_stream.hpp"
#include "runner_link.hpp"
#include "shared_memory.hpp"

namespace lab::test {
namespace {

constexpr std::size_t kMaxMessage = 1u << 20;  // a run's arguments: a few KiB
constexpr int kMaxFds = 4;                     // output, results, READY, GO

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// The next run, with its output descriptor in *out; false when the grader
// closed the socket, or sent what no grader sends (every descriptor closed).
bool receive(int socket, ServedRun* run, int* out) {
  std::vector<char> data(kMaxMessage);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  iovec iov{data.data(), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  const bool whole = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
  if (got <= 0 || !whole || (fds.size() != 2 && fds.size() != 4)) {
    if (got > 0) std::fprintf(stderr, "checker --serve: a request it cannot read\n");
    close_all(fds);
    return false;
  }
  run->args.clear();
  const char* p = data.data();
  const char* end = p + got;
  while (p < end) {
    const char* nul = static_cast<const char*>(std::memchr(p, '\0', end - p));
    if (nul == nullptr) nul = end;
    run->args.emplace_back(p, nul);
    p = nul + 1;
  }
  *out = fds[0];
  run->result_fd = fds[1];
  run->ready_fd = fds.size() == 4 ? fds[2] : -1;
  run->go_fd = fds.size() == 4 ? fds[3] : -1;
  return true;
}

void answer(int socket, int rc, bool more) {
  const int reply[2] = {rc, more ? 1 : 0};
  ssize_t n;
  do {
    n = send(socket, reply, sizeof reply, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
}

// stdout and stderr to fd, what is buffered written where it belongs first.
void output_to(int fd) {
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
}

}  // namespace

int serve(int socket, const std::function<int(const ServedRun&)>& run, const FitCheck& unfit) {
  const int quiet = open("/dev/null", O_WRONLY | O_CLOEXEC);
  for (;;) {
    ServedRun next;
    int out = -1;
    if (!receive(socket, &next, &out)) return 0;
    output_to(out);
    close(out);
    const int rc = run(next);
    // Nothing of this run reaches the next: its runner and whatever it left,
    // its memory (mapped by the runner, written by its cases), its result file.
    RunnerLink::get().stop();
    const bool all_gone = kill_all_children();
    release_all_arenas();
    close_result_stream();
    const std::string why = all_gone ? unfit() : "a process of the lab's code outlived its runner";
    if (!why.empty()) std::printf("[checker: serves no more runs: %s]\n", why.c_str());
    output_to(quiet);  // the grader's copy of the output is now the only one open
    answer(socket, rc, why.empty());
    if (!why.empty()) return 0;
  }
}

}  // namespace lab::test
