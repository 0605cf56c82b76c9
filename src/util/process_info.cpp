// Who this process is: host, pid, and the local rank read once from the
// launcher's environment (Open MPI, Slurm, MPICH; conflicting values refused).
#include "util/process_info.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "util/error.h"

namespace egm {
namespace {

// -1 for unset or empty. atoi reads garbage as 0: this rank only labels messages until set_process_rank.
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}

constexpr const char* kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};

std::map<std::string, std::string> local_rank_env() {
  std::map<std::string, std::string> env;
  for (const char* name : kLocalRankVariables)
    if (const char* value = std::getenv(name)) env[name] = value;
  return env;
}

// The first of kLocalRankVariables set in `env`: its name, value and the rank
// (-1 when the value is not a non-negative integer). Throws nothing: the
// process facts below are read while errors are being built.
struct LocalRankText {
  std::string name, value;
  int rank = -1;
};
std::optional<LocalRankText> first_local_rank(const std::map<std::string, std::string>& env) {
  for (const char* name : kLocalRankVariables) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    LocalRankText t{name, it->second};
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(t.value.c_str(), &end, 10);
    // Up to 2^20: a bound no node reaches, and it keeps the cast to int safe.
    if (!t.value.empty() && end && *end == '\0' && errno == 0 && v >= 0 && v <= 1 << 20) t.rank = static_cast<int>(v);
    return t;
  }
  return std::nullopt;
}

ProcessInfo read_process_info() {
  ProcessInfo info;
  char host[HOST_NAME_MAX + 1] = {0};
  if (gethostname(host, sizeof host) == 0) info.host = host;
  // Open MPI, then MPICH/Hydra, then PMIx launchers: the first one set is the rank.
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (int r = env_int(name); r >= 0) {
      info.rank = r;
      break;
    }
  }
  if (auto t = first_local_rank(local_rank_env())) info.local_rank = t->rank;
  return info;
}

// Read once per process on first use (a thread-safe static); set_process_rank corrects the rank once MPI knows it.
ProcessInfo& mutable_info() {
  static ProcessInfo info = read_process_info();
  return info;
}

}  // namespace

std::optional<LocalRank> local_rank_from_env(const std::map<std::string, std::string>& env) {
  const std::optional<LocalRankText> t = first_local_rank(env);
  if (!t) return std::nullopt;
  EGM_REQUIRE(t->rank >= 0, ConfigError,
              "{}='{}' is not a local rank (a non-negative integer); the launcher sets it, unset it otherwise", t->name,
              t->value);
  return LocalRank{t->rank, t->name};
}

std::optional<LocalRank> local_rank_from_env() { return local_rank_from_env(local_rank_env()); }

const ProcessInfo& process_info() { return mutable_info(); }
void set_process_rank(int rank) { mutable_info().rank = rank; }

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

}  // namespace egm
