// How the coordinator and the workers move protocol messages: a small
// interface with an MPI implementation (mpi_transport.h, what the binaries
// use) and an in-process one (in_process_transport.h: ranks as threads, for
// tests of the coordinator and worker logic without mpirun).
//
// Waiting is done by polling with short sleeps, never by a blocking receive:
// Open MPI's blocking calls spin a core at 100%, and on a small machine the
// coordinator must leave the cores to the workers.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "protocol/protocol.h"

namespace egm::protocol {

struct Envelope {
  int source = -1;
  std::string bytes;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Delivers `bytes` to `dest` (order between two ranks is kept).
  virtual void send(int dest, const std::string& bytes) = 0;
  // A message that has arrived, from any rank; nullopt when none has.
  virtual std::optional<Envelope> try_receive() = 0;
};

struct Received {
  int source = -1;
  Message message;
};

// "rank 3", for messages and errors.
std::string rank_name(int rank);

void send_message(Transport& transport, int dest, const Message& message);
// Decoded (ProtocolError names the sender on a bad message).
std::optional<Received> try_receive_message(Transport& transport);
// Polls until a message arrives or `timeout` passes (sleeping 1..20 ms between polls).
std::optional<Received> wait_message(Transport& transport, std::chrono::milliseconds timeout);

}  // namespace egm::protocol
