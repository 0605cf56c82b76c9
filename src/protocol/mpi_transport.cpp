// MpiTransport: each message an MPI_BYTE send with one tag on a duplicated
// communicator; a receive probes first, so it never blocks.
#include "protocol/mpi_transport.h"

#include <climits>

#include "mpi/check.h"
#include "util/error.h"

namespace egm::protocol {

// A duplicate: the protocol's messages can never match a collective or a receive of the training code.
MpiTransport::MpiTransport(MPI_Comm parent) : comm_(mpi::Comm::duplicate(parent)) {
  rank_ = comm_.rank();
  size_ = comm_.size();
}

void MpiTransport::send(int dest, const std::string& bytes) {
  EGM_CHECK(dest >= 0 && dest < size_, "send to rank {} of {}", dest, size_);
  EGM_CHECK(bytes.size() <= static_cast<size_t>(INT_MAX), "message of {} bytes is too large for MPI", bytes.size());
  // A blocking send: small messages complete eagerly; a large one waits until the receiver posts its receive,
  // which the receiving side does at its next try_receive.
  EGM_MPI_CHECK(MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, kProtocolTag, comm_.get()));
}

std::optional<Envelope> MpiTransport::try_receive() {
  int flag = 0;
  MPI_Status status;
  // Probe first, so the receive knows the message's size and never waits for one that has not come.
  EGM_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kProtocolTag, comm_.get(), &flag, &status));
  if (!flag) return std::nullopt;
  int count = 0;
  EGM_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &count));
  Envelope e;
  e.source = status.MPI_SOURCE;
  e.bytes.resize(static_cast<size_t>(count));
  // The probed source, not MPI_ANY_SOURCE: the message received is the one probed (single-threaded receiver).
  EGM_MPI_CHECK(MPI_Recv(e.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, kProtocolTag, comm_.get(),
                         MPI_STATUS_IGNORE));
  return e;
}

}  // namespace egm::protocol
