// The verbs that need LibTorch (train, bench, audit, data, sweep): their
// flags, parsed into the structs below, are defined once, in cmd_<verb>.cpp,
// which both binaries compile; their work is a run_<verb>() function.
//
// `egm` does not link LibTorch, so that the read-only verbs (status, runs,
// query, analyze, report, serve, submit) start without loading it (about a
// second and 480 MB of mappings: libtorch_cpu and the wheel's CUDA
// libraries). Its run_<verb>() (torch_exec.cpp) replaces the process with
// `egm-torch`, built next to it, given the same arguments; egm-torch's
// run_<verb>() (run_<verb>.cpp) does the work. Flags and --help are checked
// by `egm` before the exec, and the process id, signals, output and exit
// status stay the same (README: src/cli/README.md).
#pragma once

#include <cstdint>
#include <string>

#include "cli/run_options.h"
#include "sequential/until_options.h"
#include "util/stop_signal.h"  // kExitInterrupted
#include "launch/launch_options.h"

namespace egm::cli {

// The command line `main` was given, kept for the exec into egm-torch.
void set_command_line(int argc, char** argv);
char** command_line();

// Exit codes of `egm train` (documented in the README).
inline constexpr int kExitDiverged = 3;
// `egm audit causality`: 0 when every audited variant is causal, 1 when any reads the future.
inline constexpr int kExitNonCausal = 1;

struct TrainArgs {
  RunConfigFlags flags;
  std::string out;
  int64_t checkpoint_interval = 0;
  int64_t log_interval = 10;
  bool quiet = false;
};
void run_train(const TrainArgs& args);

struct BenchArgs {
  RunConfigFlags flags;
  int64_t timed = 20;
  int64_t warmup = 3;
  bool json = false;
  std::string profile;
  bool count_ops = false;
  double matmul_gflops = 0.0;  // > 0: MFU against this rate, not measured
};
void run_bench(const BenchArgs& args);

struct AuditCausalityArgs {
  RunConfigFlags flags;
  int64_t windows = 4;
  double tolerance = 1e-4;
  bool all = false;
  bool at_init = false;
};
void run_audit_causality(const AuditCausalityArgs& args);

struct DataFetchArgs {
  std::string dest;
  std::string url;
  bool force = false;
};
void run_data_fetch(const DataFetchArgs& args);
void run_data_verify(const std::string& path);
void run_data_path();

struct SweepOptions {
  launch::LaunchOptions launch;  // passed on to egm-coordinator as they are
  int workers = 0;  // 0: min(cores, cells); under CUDA min(GPUs x runs_per_gpu, cells)
  std::string data;
  bool print_command = false;
  std::string mpirun = "mpirun";
  std::string mpirun_args;
  std::string view = "auto";
  int64_t max_cells = 10000;  // spec::kDefaultMaxCells: a larger spec is refused before anything starts
  bool dry_run = false;       // list the cells (memory and compute per run) and stop
  sequential::UntilFlags until;           // --until ...: seeds in batches until the claims are settled (until_options.h)
};
void run_sweep(SweepOptions options);

}  // namespace egm::cli
