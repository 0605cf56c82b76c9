// The ranks that train one data-parallel run together, as a worker sees them:
// the Communicator the Trainer averages gradients over, and a per-step
// agreement on whether to stop (any member told to stop stops them all, at
// the same step, so their collectives never go out of step). The sweep binary
// forms groups over MPI (mpi_run_group.h); a worker without a factory (tests
// over the in-process transport) trains 1-rank runs only.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <vector>

#include "dist/communicator.h"

namespace egm::worker {

class RunGroup {
 public:
  virtual ~RunGroup() = default;
  virtual Communicator& communicator() = 0;
  // The largest `mine` over the members. Collective: each member calls it the
  // same number of times (the trainer polls should_stop once per step on every rank).
  virtual int agree_max(int mine) = 0;
};

// Forms the group of `world_ranks` (this process among them; the group's rank
// i is world_ranks[i], so world_ranks[0] is the trainer's rank 0) for a run on
// `device`. Collective over exactly those ranks.
using RunGroupFactory =
    std::function<std::unique_ptr<RunGroup>(const std::vector<int>& world_ranks, const c10::Device& device)>;

}  // namespace egm::worker
