// Which GPU a worker uses: arithmetic only (no LibTorch, no MPI), shared by
// the coordinator (which deals GPUs out at HELLO) and `egm sweep` (which
// checks before launching that this host has the GPUs the placement needs).
//
// GPUs are dealt round-robin: the worker with local index r on its host gets
// device r % G (G = GPUs it sees), and is the (r / G)-th run packed on it.
// With runs_per_gpu = p a host holds at most G*p workers. Round-robin rather
// than blocks (r / p) because a data-parallel run takes consecutive workers
// and NCCL needs its ranks on distinct GPUs: k consecutive local indices land
// on distinct GPUs whenever k <= G, whatever p is.
#pragma once

#include <string>

namespace egm::launch {

struct GpuPlacement {
  int device = 0;  // CUDA device index (as numbered under CUDA_VISIBLE_DEVICES)
  int slot = 0;    // which of the runs packed on that GPU this is, 0-based
};

// Round-robin placement (see above). ConfigError when visible_gpus < 1,
// runs_per_gpu < 1, local_index < 0, or local_index >= visible_gpus * runs_per_gpu
// (more workers on the host than the packing allows).
GpuPlacement place_on_gpu(int local_index, int visible_gpus, int runs_per_gpu);

// ConfigError unless `workers` workers on one host (`host`, for the message)
// that sees `visible_gpus` GPUs can all be placed at `runs_per_gpu` runs per GPU.
void require_gpu_slots(int workers, int visible_gpus, int runs_per_gpu, const std::string& host);

}  // namespace egm::launch
