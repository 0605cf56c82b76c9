// The Transport the sweep binaries use: protocol messages as MPI_BYTE
// messages with one tag on a duplicated communicator. try_receive is
// MPI_Iprobe + MPI_Get_count + MPI_Recv, so nothing ever blocks spinning.
#pragma once

#include <mpi.h>

#include "mpi/comm.h"
#include "protocol/transport.h"

namespace egm::protocol {

class MpiTransport : public Transport {
 public:
  // Duplicates `parent` (collective: every rank must construct one).
  explicit MpiTransport(MPI_Comm parent = MPI_COMM_WORLD);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int dest, const std::string& bytes) override;
  std::optional<Envelope> try_receive() override;

 private:
  mpi::Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace egm::protocol
