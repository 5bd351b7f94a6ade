#include "wire.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace lab::test {

const char* fn_name(Fn fn) {
  switch (fn) {
    case Fn::kCpuSequential: return "sum_sequential";
    case Fn::kCpuPairwise: return "sum_pairwise";
    case Fn::kCpuThreads: return "sum_threads";
    case Fn::kSum: return "reduce_sum";
    case Fn::kMax: return "reduce_max";
    case Fn::kFloatSum: return "reduce_sum_float";
    case Fn::kAllreduce: return "allreduce_sum";
  }
  return "?";
}

}  // namespace lab::test

namespace lab::wire {

void set_message(Reply* r, const std::string& text) {
  const std::size_t n = std::min(text.size(), sizeof r->message - 1);
  std::memcpy(r->message, text.data(), n);
  r->message[n] = '\0';
}

bool send_record(int socket, const void* data, std::size_t bytes, int fd) {
  msghdr h{};
  iovec io{const_cast<void*>(data), bytes};
  h.msg_iov = &io;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  for (;;) {
    const ssize_t sent = sendmsg(socket, &h, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(bytes)) return true;
    if (sent < 0 && errno == EINTR) continue;
    return false;
  }
}

bool recv_record(int socket, void* data, std::size_t bytes, int* fd) {
  msghdr h{};
  iovec io{data, bytes};
  h.msg_iov = &io;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  h.msg_control = control;
  h.msg_controllen = sizeof control;
  if (fd) *fd = -1;
  ssize_t got;
  do {
    got = recvmsg(socket, &h, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  int received = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&received, CMSG_DATA(c), sizeof received);
  if (fd) {
    *fd = received;
  } else if (received >= 0) {
    close(received);  // nobody asked for one: do not leak it
  }
  // A short or truncated record is a broken peer, never a partial message.
  return got == static_cast<ssize_t>(bytes) && (h.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
}

}  // namespace lab::wire
