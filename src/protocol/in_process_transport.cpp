// InProcessHub: one mutex-guarded mailbox per rank; each endpoint sends by
// delivering into the destination's mailbox and receives from its own.
#include "protocol/in_process_transport.h"

#include "util/error.h"

namespace egm::protocol {
namespace {

// Holds a reference: the hub must outlive every endpoint it hands out (tests keep it on their stack).
class Endpoint : public Transport {
 public:
  Endpoint(InProcessHub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.size(); }
  void send(int dest, const std::string& bytes) override { hub_.deliver(rank_, dest, bytes); }
  std::optional<Envelope> try_receive() override { return hub_.take(rank_); }

 private:
  InProcessHub& hub_;
  int rank_;
};

}  // namespace

InProcessHub::InProcessHub(int size) : mailboxes_(static_cast<size_t>(size)) {
  EGM_CHECK(size >= 1, "InProcessHub needs at least one rank, got {}", size);
}

std::unique_ptr<Transport> InProcessHub::endpoint(int rank) {
  EGM_CHECK(rank >= 0 && rank < size(), "rank {} of {}", rank, size());
  return std::make_unique<Endpoint>(*this, rank);
}

void InProcessHub::deliver(int source, int dest, const std::string& bytes) {
  EGM_CHECK(dest >= 0 && dest < size(), "send from rank {} to rank {} of {}", source, dest, size());
  // One mutex for all mailboxes: the hub serves tests and benchmarks, where simplicity beats contention.
  std::lock_guard<std::mutex> lock(mutex_);
  // FIFO per destination, as MPI orders the messages between one pair of ranks.
  mailboxes_[static_cast<size_t>(dest)].push_back(Envelope{source, bytes});
}

std::optional<Envelope> InProcessHub::take(int dest) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& box = mailboxes_[static_cast<size_t>(dest)];
  if (box.empty()) return std::nullopt;
  Envelope e = std::move(box.front());
  box.pop_front();
  return e;
}

size_t InProcessHub::queued(int dest) {
  std::lock_guard<std::mutex> lock(mutex_);
  return mailboxes_.at(static_cast<size_t>(dest)).size();
}

}  // namespace egm::protocol
