// The messages between a checker and its runner: fixed-size records over a
// Unix SOCK_SEQPACKET socket (one record per message, file descriptors for
// shared memory attached with SCM_RIGHTS). The runner only answers: nothing
// it sends can raise a grade, since the checker reads every result itself
// from memory it owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "call_spec.hpp"

namespace lab::wire {

inline constexpr std::uint32_t kMagic = 0x4C414252;  // "LABR"
inline constexpr int kRunnerFd = 3;                  // the socket, in the runner
inline constexpr std::size_t kMaxCalls = 64;

enum class Op : std::uint32_t {
  kHello = 1,      // runner -> checker, once: it is up (its CUDA context too)
  kMapPool = 2,    // the checker's device memory pool (fd attached)
  kMap = 3,        // one shared allocation: host memfd (fd attached) or device export data
  kUnmap = 4,      // drop an allocation before the checker frees it
  kWorkspace = 5,  // how many bytes of workspace fn needs for n (and gpus, kAllreduce)
  kCalls = 6,      // run calls[0, ncalls) in order, wait for all, say how it went
  kBye = 7,        // exit now
};

enum class Status : std::uint32_t {
  kOk = 0,
  kNotImplemented = 1,  // a LAB_TODO was reached
  kCudaError = 2,       // a CUDA call failed (message says which)
  kException = 3,       // the lab's code threw something else
  kContextLost = 4,     // a sticky CUDA error: the runner exits after this reply
  kBadRequest = 5,      // the runner could not understand or serve the request
};

enum class Memory : std::uint32_t { kHost = 1, kDevice = 2 };

struct Ref {
  std::uint32_t arena = 0;  // 0: no buffer
  std::uint32_t pad = 0;
  std::uint64_t offset = 0;
};

struct Call {
  test::Fn fn = test::Fn::kSum;
  std::uint32_t arg = 0;
  std::uint32_t stream = 0;
  std::uint32_t device = 0;
  std::uint32_t ranks = 1;
  std::uint32_t gpus = 0;
  std::uint64_t n = 0;
  Ref in, out, scratch;
};

struct Request {
  std::uint32_t magic = kMagic;
  Op op = Op::kHello;
  std::uint64_t seq = 0;
  // kMap / kUnmap
  std::uint32_t arena = 0;
  Memory memory = Memory::kHost;
  std::uint64_t bytes = 0;
  // kMap of device memory: the devices (a bit each) that get read and write
  // access to the runner's mapping; 0: the current device alone.
  std::uint32_t access = 0;
  std::uint32_t pad0 = 0;
  unsigned char export_data[64] = {};  // cudaMemPoolPtrExportData
  // kWorkspace: calls[0]; kCalls: calls[0, ncalls)
  std::uint32_t ncalls = 0;
  std::uint32_t pad = 0;
  Call calls[kMaxCalls];
};

struct Reply {
  std::uint32_t magic = kMagic;
  Status status = Status::kOk;
  std::uint64_t seq = 0;
  std::uint64_t value = 0;  // kWorkspace: bytes; kHello: the runner's pid
  char message[1024] = {};
};

void set_message(Reply* r, const std::string& text);

// One record, with at most one file descriptor. Return false when the peer is
// gone or the record is malformed; EINTR is retried.
bool send_record(int socket, const void* data, std::size_t bytes, int fd = -1);
// Receives exactly `bytes`; *fd (when given) gets an attached descriptor or -1.
bool recv_record(int socket, void* data, std::size_t bytes, int* fd = nullptr);

}  // namespace lab::wire
