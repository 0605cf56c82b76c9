// Messages over any Transport: encode and send, try to receive and decode,
// and wait for one with a timeout.
#include "protocol/transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace egm::protocol {

std::string rank_name(int rank) { return fmt::format("rank {}", rank); }

void send_message(Transport& transport, int dest, const Message& message) {
  transport.send(dest, encode(message));
}

std::optional<Received> try_receive_message(Transport& transport) {
  std::optional<Envelope> e = transport.try_receive();
  if (!e) return std::nullopt;
  return Received{e->source, decode(e->bytes, rank_name(e->source))};
}

std::optional<Received> wait_message(Transport& transport, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Exponential back-off from 1 to 20 ms: a reply that comes at once costs little latency, a long wait little CPU.
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    if (auto r = try_receive_message(transport)) return r;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace egm::protocol
