// egm sweep: runs a spec's cells on this machine by launching
//   mpirun -np 1 egm-coordinator SPEC ... : -np N egm-worker --data PATH
// and becoming it (exec), so signals reach mpirun directly and its exit
// status is ours (0 done, 1 a cell failed for good, 2 error, 75 interrupted:
// run it again to resume). --print-command prints the command instead (the
// Slurm batch script runs it inside an allocation).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "data/corpus_source.h"
#include "db/results_db.h"
#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "util/error.h"
#include "util/files.h"
#include "util/log.h"

namespace egm::cli {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  std::string spec;
  int workers = 0;  // 0: min(cores, cells)
  std::string db;
  std::string runs_dir = "runs";
  bool new_sweep = false;
  int threads_per_worker = 1;
  std::string data;
  bool print_command = false;
  std::string mpirun = "mpirun";
  std::string mpirun_args;
  std::string view = "auto";
  int64_t checkpoint_every = 0;
  double stop_timeout = 120;
};

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

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("_./:=@%+,-", ch) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
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
  const std::string threads = std::to_string(o.threads_per_worker);
  // -q: without it Open MPI ends every sweep whose status is not 0 (a cell
  // failed for good: 1; interrupted: 75) with a banner saying a process
  // "returned a non-zero exit code", after egm's own summary; the status still
  // comes through. It also silences mpirun's note on a rank killed by a signal
  // (the status, e.g. 137, remains): run the --print-command line without -q
  // to see mpirun's own diagnostics.
  std::vector<std::string> cmd{o.mpirun, "-q", "--oversubscribe", "--bind-to", "none",
                               "-x", "OMP_NUM_THREADS=" + threads, "-x", "OPENBLAS_NUM_THREADS=" + threads};
  for (auto& w : split_words(o.mpirun_args)) cmd.push_back(w);
  cmd.insert(cmd.end(), {"-np", "1", coordinator.string(), absolute(o.spec), "--db",
                         absolute(o.db.empty() ? db::default_db_path() : o.db), "--runs-dir", absolute(o.runs_dir),
                         "--threads-per-worker", std::to_string(o.threads_per_worker), "--view", view});
  if (o.new_sweep) cmd.push_back("--new-sweep");
  if (o.checkpoint_every > 0) cmd.insert(cmd.end(), {"--checkpoint-every", std::to_string(o.checkpoint_every)});
  if (o.stop_timeout != 120) cmd.insert(cmd.end(), {"--stop-timeout", fmt::format("{}", o.stop_timeout)});
  cmd.insert(cmd.end(), {":", "-np", std::to_string(workers), worker.string(), "--data", data});
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

void run_sweep(const SweepOptions& o) {
  // Checked here first so a bad spec fails before anything starts (and the
  // database is not touched); the coordinator checks it again.
  const spec::ExperimentSpec spec = spec::load_spec(o.spec);
  const int cells = static_cast<int>(spec.variants.size() * spec.seeds.size());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A data-parallel cell takes that many workers at once (coordinator/README.md).
  int ranks = 1;
  for (const auto& variant : spec.variants) ranks = std::max(ranks, spec.ranks_for(variant));
  const int workers = o.workers > 0 ? o.workers : std::max(ranks, std::min(cores, cells));
  EGM_REQUIRE(workers >= ranks, ConfigError,
              "{}: some cells need {} workers (data_parallel) but --workers is {}; pass --workers {} or more",
              o.spec, ranks, workers, ranks);

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

}  // namespace

void register_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand("sweep", "train every cell of a spec: 1 coordinator + N workers under mpirun");
  cmd->add_option("spec", o->spec, "experiment spec (JSON; experiments/README.md)")->required();
  cmd->add_option("--workers", o->workers, "worker processes (default: min(cores, cells), at least the largest data_parallel)")->check(CLI::PositiveNumber);
  cmd->add_option("--db", o->db, "results database (default: $EGM_DB, else runs/egm.sqlite)");
  cmd->add_option("--runs-dir", o->runs_dir, "run folders: RUNS_DIR/<sweep>/<cell>-<config hash>")
      ->capture_default_str();
  cmd->add_flag("--new-sweep", o->new_sweep, "the spec changed: keep the old sweep as NAME@ID and start a new one");
  cmd->add_option("--threads-per-worker", o->threads_per_worker, "intra-op threads per worker")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--data", o->data, "corpus file (default: $EGM_DATA, else data/tinyshakespeare/input.txt)");
  cmd->add_flag("--print-command", o->print_command, "print the mpirun command instead of running it");
  cmd->add_option("--mpirun", o->mpirun, "the MPI launcher")->capture_default_str();
  cmd->add_option("--mpirun-args", o->mpirun_args, "extra launcher arguments, e.g. \"--mca btl self,vader\"");
  cmd->add_option("--view", o->view, "live view: auto, tty (redraw in place), plain (a status line every 10 s), none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "tty", "plain", "none"}));
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "also checkpoint every N steps (default: at each eval)");
  cmd->add_option("--stop-timeout", o->stop_timeout, "seconds to wait for checkpoints after a stop signal")
      ->capture_default_str();
  cmd->footer(
      "Exit status: 0 every cell done; 1 some cell failed for good; 2 error (bad spec: nothing ran); 75 interrupted "
      "by SIGUSR2/SIGTERM/SIGINT after checkpointing: run the same command again to resume. Running a finished or "
      "interrupted spec again skips done cells and resumes the rest.");
  cmd->callback([o] { run_sweep(*o); });
}

}  // namespace egm::cli
