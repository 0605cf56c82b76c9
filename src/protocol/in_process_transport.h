// Ranks as threads: an InProcessHub holds one mailbox per rank and hands out
// an endpoint (a Transport) per rank. Tests run the coordinator against
// scripted workers (or a worker against a scripted coordinator) in one
// process, with the same message encoding the MPI transport carries.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "protocol/transport.h"

namespace egm::protocol {

class InProcessHub {
 public:
  explicit InProcessHub(int size);
  int size() const { return static_cast<int>(mailboxes_.size()); }
  // The Transport of `rank`; it refers to the hub, which must outlive it.
  std::unique_ptr<Transport> endpoint(int rank);

  void deliver(int source, int dest, const std::string& bytes);
  std::optional<Envelope> take(int dest);
  // Messages waiting in `dest`'s mailbox (a simulation's flow control).
  size_t queued(int dest);

 private:
  std::mutex mutex_;
  std::vector<std::deque<Envelope>> mailboxes_;
};

}  // namespace egm::protocol
