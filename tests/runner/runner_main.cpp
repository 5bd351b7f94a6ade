// main() of a runner: the process that holds a lab's code (the student's, a
// reference solution or a mutant) and does nothing but answer the checker's
// requests on file descriptor 3 (wire.hpp). It never sees an expected value,
// never times anything and writes no report: the checker reads every result
// from memory it owns. Whatever this process prints goes to the checker, which
// shows the student a capped copy.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "direct_calls.hpp"
#include "not_implemented.hpp"
#include "runner_platform.hpp"
#include "wire.hpp"

namespace {

using lab::wire::Memory;
using lab::wire::Op;
using lab::wire::Reply;
using lab::wire::Request;
using lab::wire::Status;

struct Mapping {
  void* base = nullptr;
  std::uint64_t bytes = 0;
  Memory memory = Memory::kHost;
};

std::map<std::uint32_t, Mapping> g_mappings;

void* resolve(const lab::wire::Ref& ref) {
  if (ref.arena == 0) return nullptr;
  const auto it = g_mappings.find(ref.arena);
  if (it == g_mappings.end() || ref.offset > it->second.bytes)
    throw std::invalid_argument("a call names memory this runner was never given");
  return static_cast<unsigned char*>(it->second.base) + ref.offset;
}

void map(const Request& q, int fd, Reply* r) {
  Mapping m{nullptr, q.bytes, q.memory};
  if (q.memory == Memory::kHost) {
    if (fd < 0) throw std::invalid_argument("a host mapping needs a file descriptor");
    m.base = mmap(nullptr, q.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m.base == MAP_FAILED) throw std::runtime_error("mmap of shared memory failed");
  } else {
    if (fd < 0) throw std::invalid_argument("a device mapping needs a file descriptor");
    m.base = lab::runner::import_device(fd, q.bytes, q.access);
    close(fd);
  }
  g_mappings[q.arena] = m;
  r->value = q.arena;
}

void unmap(const Request& q) {
  const auto it = g_mappings.find(q.arena);
  if (it == g_mappings.end()) return;
  if (it->second.memory == Memory::kHost) munmap(it->second.base, it->second.bytes);
  else lab::runner::release_device(it->second.base);
  g_mappings.erase(it);
}

lab::test::Invocation invocation(const lab::wire::Call& c) {
  lab::test::Invocation inv;
  inv.fn = c.fn;
  inv.arg = c.arg;
  inv.stream = c.stream;
  inv.device = c.device;
  inv.ranks = c.ranks;
  inv.gpus = c.gpus;
  inv.n = c.n;
  inv.in = resolve(c.in);
  inv.out = resolve(c.out);
  inv.scratch = resolve(c.scratch);
  return inv;
}

// Runs the request's calls. Exceptions from the lab's code become the reply's status.
bool calls(const Request& q, Reply* r) {
  if (q.ncalls > lab::wire::kMaxCalls) throw std::invalid_argument("too many calls in one request");
  for (std::uint32_t k = 0; k < q.ncalls;) {
    const lab::test::Invocation inv = invocation(q.calls[k]);
    if (inv.fn != lab::test::Fn::kAllreduce) {
      lab::test::direct::invoke(inv, lab::runner::stream(inv.stream, inv.device));
      ++k;
      continue;
    }
    // One call over several GPUs: its ranks are the next inv.ranks records.
    if (inv.ranks == 0 || inv.ranks > q.ncalls - k)
      throw std::invalid_argument("an all-reduce names more ranks than the request holds");
    std::vector<lab::test::Invocation> ranks;
    std::vector<void*> streams;
    for (std::uint32_t r = 0; r < inv.ranks; ++r) {
      ranks.push_back(invocation(q.calls[k + r]));
      streams.push_back(lab::runner::stream(ranks.back().stream, ranks.back().device));
    }
    lab::test::direct::invoke_ranks(ranks.data(), streams.data(), inv.ranks, inv.gpus);
    k += inv.ranks;
  }
  bool todo = false, lost = false;
  const std::string why = lab::runner::finish(&todo, &lost);
  if (lost) {
    r->status = Status::kContextLost;
    lab::wire::set_message(r, why);
    return false;
  }
  if (!why.empty()) {
    r->status = Status::kCudaError;
    lab::wire::set_message(r, why);
  } else if (todo) {
    r->status = Status::kNotImplemented;
    lab::wire::set_message(r, "not implemented: a kernel still runs the skeleton's LAB_TODO()");
  }
  return true;
}

// Serves one request; false when the runner must stop.
bool serve(const Request& q, int fd, Reply* r) {
  switch (q.op) {
    case Op::kMapPool:
      lab::runner::import_pool(fd);
      if (fd >= 0) close(fd);
      return true;
    case Op::kMap: map(q, fd, r); return true;
    case Op::kUnmap: unmap(q); return true;
    case Op::kWorkspace: {
      const lab::wire::Call& c = q.calls[0];
      r->value = lab::test::direct::workspace_bytes(c.fn, c.arg, c.n);
      return true;
    }
    case Op::kCalls: return calls(q, r);
    case Op::kBye: std::exit(0);
    default: throw std::invalid_argument("unknown request");
  }
}

}  // namespace

int main() {
  signal(SIGPIPE, SIG_IGN);
  const int socket = lab::wire::kRunnerFd;
  auto* request = new Request;  // 10 KB: not on the stack of a student's deep recursion
  Reply reply;
  try {
    lab::runner::prepare();
  } catch (const std::exception& e) {
    reply.status = Status::kCudaError;
    lab::wire::set_message(&reply, e.what());
  }
  reply.value = static_cast<std::uint64_t>(getpid());
  if (!lab::wire::send_record(socket, &reply, sizeof reply)) return 1;
  for (;;) {
    int fd = -1;
    if (!lab::wire::recv_record(socket, request, sizeof *request, &fd)) return 0;  // checker gone
    reply = Reply{};
    reply.seq = request->seq;
    bool go_on = true;
    try {
      if (request->magic != lab::wire::kMagic) throw std::invalid_argument("bad request");
      go_on = serve(*request, fd, &reply);
    } catch (const lab::NotImplemented& e) {
      reply.status = Status::kNotImplemented;
      lab::wire::set_message(&reply, e.what());
    } catch (const std::invalid_argument& e) {
      reply.status = Status::kBadRequest;
      lab::wire::set_message(&reply, e.what());
    } catch (const std::bad_alloc&) {
      reply.status = Status::kException;
      lab::wire::set_message(&reply, "std::bad_alloc: out of memory");
    } catch (const std::exception& e) {
      const bool cuda = lab::runner::is_cuda_error(e);
      reply.status = cuda ? Status::kCudaError : Status::kException;
      lab::wire::set_message(&reply,
                             cuda ? std::string(e.what()) : std::string("exception: ") + e.what());
    } catch (...) {
      reply.status = Status::kException;
      lab::wire::set_message(&reply, "an exception that is not a std::exception");
    }
    std::fflush(stdout);
    if (!lab::wire::send_record(socket, &reply, sizeof reply)) return 0;
    if (!go_on) return 3;
  }
}
