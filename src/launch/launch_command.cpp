// The mpirun line of a sweep: the coordinator and workers with their flags,
// the launcher's own arguments, and checks (enough workers, hosts, a starter).
#include "launch/launch_command.h"

#include <algorithm>

#include "util/error.h"
#include "util/shell.h"

namespace egm::launch {
namespace fs = std::filesystem;

// A small shell-like split (quotes group, no escapes or expansion): enough for mpirun options, and no shell runs it.
std::vector<std::string> split_launcher_args(const std::string& text) {
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
      // An empty quoted word ("") is still a word: in_word is set by the quote itself.
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

// Open MPI's spellings of a host list; with any of them the ranks may be remote and need its normal starter.
bool names_hosts(const std::vector<std::string>& launcher_args) {
  for (const std::string& w : launcher_args)
    if (w == "--host" || w == "-H" || w == "-host" || w == "--hostfile" || w == "-hostfile" ||
        w == "--machinefile" || w == "-machinefile" || w == "--default-hostfile")
      return true;
  return false;
}

fs::path own_binary_dir() {
  std::error_code ec;
  // /proc/self/exe names the running binary even when it was started through a relative path or a symlink.
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  EGM_REQUIRE(!ec, IoError, "cannot locate the egm binary (/proc/self/exe): {}", ec.message());
  return self.parent_path();
}

std::string shell_command_line(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& w : words) line += (line.empty() ? "" : " ") + shell_quote(w);
  return line;
}

namespace {

std::string absolute(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

// True when the launcher arguments already choose how mpirun starts its
// processes (--mca plm NAME, -mca plm NAME): the user's choice stands.
bool chooses_starter(const std::vector<std::string>& args) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if ((args[i] == "--mca" || args[i] == "-mca") && args[i + 1] == "plm") return true;
  return false;
}

}  // namespace

void require_enough_workers(int workers, int largest_cell_ranks, const std::string& spec_path) {
  EGM_REQUIRE(workers >= largest_cell_ranks, ConfigError,
              "{}: some cells need {} workers (data_parallel) but --workers is {}; pass --workers {} or more",
              spec_path, largest_cell_ranks, workers, largest_cell_ranks);
}

namespace {

// Paths made absolute: the ranks (and a batch job) may start elsewhere.
LaunchOptions with_absolute_paths(LaunchOptions o) {
  o.spec_path = absolute(o.spec_path);
  o.db_path = absolute(o.db_path);
  o.runs_dir = absolute(o.runs_dir);
  for (auto& path : o.reuse_from) path = absolute(path);  // read again by every requeued attempt
  return o;
}

}  // namespace

std::vector<std::string> sweep_verb_command(const SweepLaunch& l, const std::vector<std::string>& extra) {
  require_enough_workers(l.workers, l.largest_cell_ranks, l.options.spec_path);
  EGM_CHECK(!l.options.db_path.empty(), "the launch needs the database's path resolved (db::default_db_path)");
  const fs::path egm = l.bin_dir / "egm";
  EGM_REQUIRE(fs::exists(egm), IoError, "{} not found: the batch job runs egm sweep from egm's own folder",
              egm.string());
  std::vector<std::string> cmd{egm.string(), "sweep"};
  for (auto& a : launch_flags(with_absolute_paths(l.options))) cmd.push_back(a);
  cmd.insert(cmd.end(), {"--workers", std::to_string(l.workers), "--data", l.data, "--view", l.view});
  if (l.mpirun != "mpirun") cmd.insert(cmd.end(), {"--mpirun", l.mpirun});
  if (!l.mpirun_args.empty()) cmd.insert(cmd.end(), {"--mpirun-args", l.mpirun_args});
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  return cmd;
}

std::vector<std::string> sweep_launch_command(const SweepLaunch& l) {
  require_enough_workers(l.workers, l.largest_cell_ranks, l.options.spec_path);
  EGM_CHECK(!l.options.db_path.empty(), "the launch needs the database's path resolved (db::default_db_path)");
  const fs::path coordinator = l.bin_dir / "egm-coordinator", worker = l.bin_dir / "egm-worker";
  for (const fs::path& p : {coordinator, worker})
    EGM_REQUIRE(fs::exists(p), IoError, "{} not found: egm sweep runs the egm-coordinator and egm-worker built next "
                "to egm (cmake --build BUILD --target egm-coordinator egm-worker)", p.string());

  // Every rank's BLAS gets the worker's thread count before it loads: Debian's
  // OpenBLAS otherwise starts a thread per core in each process, and on a
  // full machine those threads spin against each other (tiny preset measured:
  // 6.5 ms/step with 1 BLAS thread, 250 ms/step without, 2 cores, loaded).
  const std::string threads = std::to_string(l.options.threads_per_worker);
  // -q: without it Open MPI ends every sweep whose status is not 0 (a cell
  // failed for good: 1; interrupted: 75) with a banner saying a process
  // "returned a non-zero exit code", after egm's own summary; the status still
  // comes through. It also silences mpirun's note on a rank killed by a signal
  // (the status, e.g. 137, remains): run the --print-command line without -q
  // to see mpirun's own diagnostics.
  // --oversubscribe: the coordinator needs a slot too; --bind-to none: a rank pinned to one core would run all its threads there.
  std::vector<std::string> cmd{l.mpirun, "-q", "--oversubscribe", "--bind-to", "none",
                               "-x", "OMP_NUM_THREADS=" + threads, "-x", "OPENBLAS_NUM_THREADS=" + threads};
  const std::vector<std::string> extra = split_launcher_args(l.mpirun_args);
  // RankHosts says why: one host needs no remote agent (ssh) to start its ranks.
  if (l.hosts == RankHosts::this_host && !names_hosts(extra) && !chooses_starter(extra))
    cmd.insert(cmd.end(), {"--mca", "plm", "isolated"});
  // mpirun's own options, the user's included, must all come before the first app context (-np ...).
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  cmd.insert(cmd.end(), {"-np", "1", coordinator.string()});
  for (auto& a : launch_flags(with_absolute_paths(l.options))) cmd.push_back(a);
  cmd.insert(cmd.end(), {"--view", l.view, ":", "-np", std::to_string(l.workers), worker.string(), "--data", l.data});
  return cmd;
}

}  // namespace egm::launch
