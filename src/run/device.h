// Where a run trains, as one type from the command line to the database:
// `--device` and a spec's "device" are parsed into a DeviceName once per
// process (launch/launch_options.h), travel in ASSIGN as its text, reach the
// trainer in RuntimeOptions, and the worker reports the device and backend it
// really used (the status record), which the database stores. Torch-free, so
// the coordinator and the front doors check a name before anything starts;
// the trainer turns it into a torch::Device (train/trainer.h).
#pragma once

#include <string>
#include <string_view>

namespace egm {

struct DeviceName {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = -1;  // cuda:N; -1 for "cuda" (dealt out per worker, or device 0 in one process) and for cpu

  bool is_cuda() const { return kind == Kind::cuda; }
  std::string str() const;  // "cpu", "cuda", "cuda:1"
  friend bool operator==(const DeviceName& a, const DeviceName& b) { return a.kind == b.kind && a.index == b.index; }
  friend bool operator!=(const DeviceName& a, const DeviceName& b) { return !(a == b); }
};

// "cpu", "cuda" or "cuda:N"; ConfigError for anything else ("tpu", "cuda:x",
// "cuda:-1", "CPU"), naming `what` (the flag or field; empty: not named) and
// the accepted forms.
DeviceName parse_device_name(std::string_view text, const std::string& what = "--device");

// The device kind alone ("cpu" or "cuda"): what `egm analyze` compares
// before it pairs runs.
const char* device_kind(const DeviceName& device);

// True when this egm was compiled against a LibTorch with CUDA (torch_cuda).
bool built_with_cuda();

// ConfigError unless `device` can run on this build: CUDA asked of a CPU-only
// build names the LibTorch to build against instead.
void require_buildable(const DeviceName& device);

// How the ranks of one run average their gradients (dist/communicator.h).
enum class Backend {
  none,  // one rank: nothing to average
  mpi,   // MPI_Allreduce (CUDA tensors staged through host memory)
  nccl,  // NCCL on CUDA devices
};
const char* to_string(Backend backend);
Backend parse_backend(std::string_view name);  // ProtocolError for an unknown name

// The one backend rule, used by the workers that build the communicator
// (dist/make_communicator.h) and by the coordinator that records it: none for
// one rank; NCCL for a CUDA device when every rank's build has it; MPI otherwise.
Backend backend_for(const DeviceName& device, int world_size, bool nccl_on_every_rank);

}  // namespace egm
