// A RunGroup over MPI: the communicator of exactly the run's ranks, made with
// MPI_Comm_create_group (collective over those ranks only, so the other
// workers go on with their own cells), and the Communicator that
// make_communicator picks for the device on top of it (MPI on CPU, NCCL on
// CUDA when built). The stop agreement is one MPI_Allreduce(MAX) of an int
// on the group communicator itself; the Communicator works on its own
// duplicate, so the two never match each other's calls.
#pragma once

#include <mpi.h>

#include "mpi/comm.h"
#include "workers/run_group.h"

namespace egm::worker {

class MpiRunGroup : public RunGroup {
 public:
  // Collective over `world_ranks` (ranks of `world`).
  MpiRunGroup(MPI_Comm world, const std::vector<int>& world_ranks, const c10::Device& device);
  ~MpiRunGroup() override;  // the Communicator (and its duplicate) first, then the group
  MpiRunGroup(const MpiRunGroup&) = delete;
  MpiRunGroup& operator=(const MpiRunGroup&) = delete;

  Communicator& communicator() override { return *communicator_; }
  int agree_max(int mine) override;

 private:
  mpi::Comm group_;
  std::unique_ptr<Communicator> communicator_;
};

// The factory egm-worker gives its Worker: groups of MPI_COMM_WORLD ranks
// (the sweep protocol's ranks are those of MPI_COMM_WORLD).
RunGroupFactory mpi_run_groups();

}  // namespace egm::worker
