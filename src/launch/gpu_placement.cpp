// place_on_gpu: a worker's GPU from its index on its host, the GPUs it sees and
// runs_per_gpu; and the check that a host has the GPUs its workers need.
#include "launch/gpu_placement.h"

#include "util/error.h"

namespace egm::launch {

GpuPlacement place_on_gpu(int local_index, int visible_gpus, int runs_per_gpu) {
  EGM_REQUIRE(visible_gpus >= 1, ConfigError, "no GPU is visible to this worker (CUDA_VISIBLE_DEVICES?)");
  EGM_REQUIRE(runs_per_gpu >= 1, ConfigError, "runs per GPU must be at least 1, got {}", runs_per_gpu);
  EGM_REQUIRE(local_index >= 0, ConfigError, "local rank must be non-negative, got {}", local_index);
  EGM_REQUIRE(local_index < visible_gpus * runs_per_gpu, ConfigError,
              "local rank {} has no GPU: {} GPUs x {} runs per GPU hold local ranks 0..{}; start fewer workers "
              "per node or raise runs per GPU",
              local_index, visible_gpus, runs_per_gpu, visible_gpus * runs_per_gpu - 1);
  // Round-robin over the GPUs first: with fewer workers than slots, each GPU gets one run before any gets two.
  return {local_index % visible_gpus, local_index / visible_gpus};
}

void require_gpu_slots(int workers, int visible_gpus, int runs_per_gpu, const std::string& host) {
  EGM_REQUIRE(visible_gpus >= 1, ConfigError,
              "--device cuda: no GPU is visible on {} (CUDA_VISIBLE_DEVICES, or a node without GPUs); use --device "
              "cpu or run where GPUs are",
              host);
  // Checked before launch: a worker without a slot would fail only after mpirun had started every rank.
  const int slots = visible_gpus * runs_per_gpu;
  EGM_REQUIRE(workers <= slots, ConfigError,
              "--device cuda: {} workers on {} need {} GPUs at runs_per_gpu {}, but it has {} ({} slots); pass "
              "--workers {} or raise runs_per_gpu in the spec",
              workers, host, (workers + runs_per_gpu - 1) / runs_per_gpu, runs_per_gpu, visible_gpus, slots, slots);
}

}  // namespace egm::launch
