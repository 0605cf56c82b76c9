// egm sweep's work (egm-torch; its flags: cmd_sweep.cpp): runs a spec's
// cells on this machine by launching
//   mpirun -np 1 egm-coordinator SPEC ... : -np N egm-worker --data PATH
// and becoming it (exec), so signals reach mpirun directly and its exit
// status is ours (0 done, 1 a cell failed for good, 2 error, 75 interrupted:
// run it again to resume). --print-command prints the command instead (the
// Slurm batch script runs it inside an allocation).
#include <fmt/format.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/torch_verbs.h"
#include "data/corpus_source.h"
#include "db/results_db.h"
#include "launch/gpu_placement.h"
#include "launch/launch_options.h"
#include "slurm/slurm_env.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "train/cuda_memory.h"
#include "train/memory_estimate.h"
#include "util/error.h"
#include "util/files.h"
#include "util/log.h"
#include "util/process_info.h"
#include "util/shell.h"

namespace egm::cli {
namespace {

namespace fs = std::filesystem;

// Splits "--mca btl self,vader -x 'A=b c'" like a shell would (quotes, no expansion).
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char ch : text) {
    if (quote) {
      if (ch == quote) {
        quote = 0;
      } else {
        word += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  EGM_REQUIRE(!quote, ConfigError, "--mpirun-args: unbalanced quote in {}", text);
  if (in_word) words.push_back(word);
  return words;
}

// The folder of the running egm binary; egm-coordinator and egm-worker are built next to it.
fs::path binary_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  EGM_REQUIRE(!ec, IoError, "cannot locate the egm binary (/proc/self/exe): {}", ec.message());
  return self.parent_path();
}

std::string absolute(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

std::vector<std::string> build_command(const SweepOptions& o, int workers, const std::string& view,
                                       const std::string& data) {
  const fs::path dir = binary_dir();
  const fs::path coordinator = dir / "egm-coordinator", worker = dir / "egm-worker";
  for (const fs::path& p : {coordinator, worker})
    EGM_REQUIRE(fs::exists(p), IoError, "{} not found: egm sweep runs the egm-coordinator and egm-worker built next "
                "to egm (cmake --build BUILD --target egm-coordinator egm-worker)", p.string());

  // Every rank's BLAS gets the worker's thread count before it loads: Debian's
  // OpenBLAS otherwise starts a thread per core in each process, and on a
  // full machine those threads spin against each other (tiny preset measured:
  // 6.5 ms/step with 1 BLAS thread, 250 ms/step without, 2 cores, loaded).
  const std::string threads = std::to_string(o.launch.threads_per_worker);
  // -q: without it Open MPI ends every sweep whose status is not 0 (a cell
  // failed for good: 1; interrupted: 75) with a banner saying a process
  // "returned a non-zero exit code", after egm's own summary; the status still
  // comes through. It also silences mpirun's note on a rank killed by a signal
  // (the status, e.g. 137, remains): run the --print-command line without -q
  // to see mpirun's own diagnostics.
  std::vector<std::string> cmd{o.mpirun, "-q", "--oversubscribe", "--bind-to", "none",
                               "-x", "OMP_NUM_THREADS=" + threads, "-x", "OPENBLAS_NUM_THREADS=" + threads};
  for (auto& w : split_words(o.mpirun_args)) cmd.push_back(w);
  // Paths made absolute: the ranks may start elsewhere (a batch job's folder).
  launch::LaunchOptions passed = o.launch;
  passed.spec_path = absolute(passed.spec_path);
  passed.db_path = absolute(passed.db_path.empty() ? db::default_db_path() : passed.db_path);
  passed.runs_dir = absolute(passed.runs_dir);
  cmd.insert(cmd.end(), {"-np", "1", coordinator.string()});
  for (auto& a : launch::launch_flags(passed)) cmd.push_back(a);
  cmd.insert(cmd.end(), {"--view", view, ":", "-np", std::to_string(workers), worker.string(), "--data", data});
  return cmd;
}

[[noreturn]] void exec_command(const std::vector<std::string>& cmd) {
  if (geteuid() == 0) {
    // Open MPI refuses root unless told; containers run as root.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  std::vector<char*> argv;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  execvp(argv[0], argv.data());
  EGM_THROW(IoError, "cannot run {}: {}; install Open MPI (mpirun) or pass --mpirun PATH", cmd[0],
            std::strerror(errno));
}

// CUDA devices this process sees (0 on a CPU-only build or a node without GPUs).
int visible_gpu_count() { return static_cast<int>(torch::cuda::device_count()); }

// True when the ranks may start on other hosts too: a Slurm allocation of
// several nodes, or launcher arguments that name hosts.
bool spans_hosts(const SweepOptions& o) {
  const slurm::SlurmEnv env = slurm::read_slurm_env();
  if (env.nodes && *env.nodes > 1) return true;
  for (const std::string& w : split_words(o.mpirun_args))
    if (w == "--host" || w == "-H" || w == "--hostfile" || w == "--machinefile" || w == "-hostfile") return true;
  return false;
}

// MB of memory this host has available now (MemAvailable), 0 when unknown.
double host_available_mb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb / 1024.0;
  return 0;
}

// What a worker process holds before its model (LibTorch, CUDA's context on a
// GPU): measured, results/BENCHMARKS.md ("Memory estimate").
constexpr double kWorkerRuntimeMb = 400, kCudaContextMb = 600;

// Refuses a sweep whose runs cannot all fit where they are placed: the largest
// cell's estimate (train/memory_estimate.h; a data-parallel rank holds its
// share of the batch) times the runs that share the host's memory or one GPU.
void require_memory_fits(const spec::ExperimentSpec& spec, const DeviceName& device, int runs_sharing,
                         const std::string& where, double have_mb) {
  if (have_mb <= 0 || runs_sharing < 1) return;
  const bool cuda = device.is_cuda();
  MemoryEstimate worst;
  std::string worst_variant;
  for (const std::string& variant : spec.variants) {
    RunConfig c = spec::cell_config(spec, variant, spec.seeds.front());
    c.train.batch_size = std::max<int64_t>(1, c.train.batch_size / spec.ranks_for(variant));
    const MemoryEstimate e = estimate_training_memory(c, cuda, cuda ? kCudaContextMb : kWorkerRuntimeMb);
    if (e.total_mb() > worst.total_mb()) worst = e, worst_variant = variant;
  }
  const double need = worst.total_mb() * runs_sharing;
  EGM_REQUIRE(need <= have_mb, ConfigError,
              "{}: {} run{} sharing {} need about {:.0f} MB but it has {:.0f} MB; a {} cell needs {}; pass fewer "
              "--workers{} or lower train.batch_size / model.block_size",
              spec.source, runs_sharing, runs_sharing == 1 ? "" : "s", where, need, have_mb, worst_variant,
              worst.summary(), cuda ? ", lower runs_per_gpu" : "");
}

}  // namespace

void run_sweep(SweepOptions o) {
  // Checked here first so a bad spec fails before anything starts (and the
  // database is not touched); the coordinator checks it again.
  const spec::ExperimentSpec spec = spec::load_spec(o.launch.spec_path, o.launch.grid);
  const int cells = static_cast<int>(spec.points().size() * spec.variants.size() * spec.seeds.size());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A data-parallel cell takes that many workers at once (coordinator/README.md).
  int ranks = 1;
  for (const auto& variant : spec.variants) ranks = std::max(ranks, spec.ranks_for(variant));

  // The device, resolved once and passed on explicitly; CUDA is checked against
  // this build and this host's GPUs before anything starts.
  const DeviceName device = launch::resolve_device(o.launch.device, spec.device);
  o.launch.device = device;
  require_buildable(device);
  const bool one_host = !spans_hosts(o);  // only then are this host's GPUs and memory the ones that count
  int per_host = cores;  // workers that fit on this host by default
  // --print-command renders the launch for another host (a batch job's node):
  // its GPUs are checked there, at the workers' HELLO, before the database opens.
  if (device.is_cuda() && !o.print_command) {
    const int gpus = visible_gpu_count();
    const std::string host = process_info().host;
    EGM_REQUIRE(gpus >= 1, ConfigError,
                "--device {}: no GPU is visible on {} (CUDA_VISIBLE_DEVICES, or a node without GPUs); use --device "
                "cpu or run where GPUs are",
                device.str(), host);
    EGM_REQUIRE(device.index < gpus, ConfigError, "--device {}: {} has {} GPU{} (cuda:0..cuda:{})", device.str(),
                host, gpus, gpus == 1 ? "" : "s", gpus - 1);
    per_host = device.index < 0 ? gpus * spec.runs_per_gpu : spec.runs_per_gpu;
    if (o.workers > 0 && one_host) {
      if (device.index < 0) {
        launch::require_gpu_slots(o.workers, gpus, spec.runs_per_gpu, host);
      } else {
        EGM_REQUIRE(o.workers <= spec.runs_per_gpu, ConfigError,
                    "--device {}: {} workers share one GPU but runs_per_gpu is {}; pass --workers {} or raise "
                    "runs_per_gpu in the spec",
                    device.str(), o.workers, spec.runs_per_gpu, spec.runs_per_gpu);
      }
    }
  }
  const int workers = o.workers > 0 ? o.workers : std::max(ranks, std::min(per_host, cells));
  EGM_REQUIRE(workers >= ranks, ConfigError,
              "{}: some cells need {} workers (data_parallel) but --workers is {}; pass --workers {} or more",
              o.launch.spec_path, ranks, workers, ranks);
  // Memory, where this host is the one that runs them (a batch job's nodes check nothing here).
  if (!o.print_command && one_host) {
    if (device.is_cuda()) {
      const int gpu = std::max(0, device.index);
      const int sharing = device.index < 0 ? std::min(workers, spec.runs_per_gpu) : workers;
      require_memory_fits(spec, device, sharing, fmt::format("GPU {} on {}", gpu, process_info().host),
                          cuda_device_memory_mb(gpu).value_or(0));
    }
    require_memory_fits(spec, DeviceName{}, device.is_cuda() ? 0 : workers,
                        fmt::format("the memory of {}", process_info().host), host_available_mb());
  }

  const std::string data = absolute(locate_corpus(o.data));
  EGM_REQUIRE(file_exists(data), IoError,
              "corpus {} not found: run `egm data fetch`, or pass --data PATH (or set EGM_DATA)", data);

  std::string view = o.view;
  if (view == "auto") view = o.print_command || !isatty(STDOUT_FILENO) ? "plain" : "tty";
  const std::vector<std::string> cmd = build_command(o, workers, view, data);
  std::string line;
  for (const auto& w : cmd) line += (line.empty() ? "" : " ") + shell_quote(w);
  if (o.print_command) {
    std::cout << line << "\n";
    return;
  }
  log::debug("running {}", line);
  exec_command(cmd);
}

}  // namespace egm::cli
