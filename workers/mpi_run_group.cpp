// A data-parallel run's group over MPI: MPI_Comm_create_group over its ranks,
// its Communicator, and agree_max, how its members agree on the step to stop at.
#include "workers/mpi_run_group.h"

#include <torch/torch.h>

#include "dist/make_communicator.h"
#include "mpi/check.h"
#include "util/error.h"

namespace egm::worker {
namespace {

// MPI_Comm_create_group's tag. One tag is enough: a process is in at most one
// group being formed at a time, and concurrent groups are disjoint.
constexpr int kGroupTag = 4242;

}  // namespace

MpiRunGroup::MpiRunGroup(MPI_Comm world, const std::vector<int>& world_ranks, const torch::Device& device) {
  EGM_REQUIRE(!world_ranks.empty(), ConfigError, "a run group needs at least one rank");
  MPI_Group world_group = MPI_GROUP_NULL, run_group = MPI_GROUP_NULL;
  EGM_MPI_CHECK(MPI_Comm_group(world, &world_group));
  // The group's ranks in ASSIGN's order: the first (the leader) is rank 0 of the new communicator.
  const int rc_incl =
      MPI_Group_incl(world_group, static_cast<int>(world_ranks.size()), world_ranks.data(), &run_group);
  MPI_Group_free(&world_group);
  EGM_MPI_CHECK(rc_incl);
  MPI_Comm group = MPI_COMM_NULL;
  // create_group, not MPI_Comm_create: only the group's members take part, so the other workers keep training.
  const int rc_create = MPI_Comm_create_group(world, run_group, kGroupTag, &group);
  MPI_Group_free(&run_group);
  EGM_MPI_CHECK(rc_create);
  group_ = mpi::Comm::adopt(group);
  communicator_ = make_communicator(group_.get(), device);
}

MpiRunGroup::~MpiRunGroup() {
  communicator_.reset();  // frees its duplicate first; group_ then frees itself
}

int MpiRunGroup::agree_max(int mine) {
  int agreed = 0;
  // MAX: one member that must stop stops them all, at the same step, so no collective is left waiting.
  EGM_MPI_CHECK(MPI_Allreduce(&mine, &agreed, 1, MPI_INT, MPI_MAX, group_.get()));
  return agreed;
}

RunGroupFactory mpi_run_groups() {
  return [](const std::vector<int>& world_ranks, const torch::Device& device) -> std::unique_ptr<RunGroup> {
    return std::make_unique<MpiRunGroup>(MPI_COMM_WORLD, world_ranks, device);
  };
}

}  // namespace egm::worker
