// Parsing of the SLURM_* environment (see slurm_env.h).
#include "slurm/slurm_env.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "util/error.h"

namespace egm::slurm {
namespace {

// A non-negative decimal integer no larger than `max`; anything else
// (sign, spaces, suffixes, overflow) is refused with the variable's name.
std::uint64_t parse_count(const std::string& name, const std::string& value, std::uint64_t max) {
  bool digits_only = !value.empty();
  for (char c : value) digits_only = digits_only && c >= '0' && c <= '9';
  EGM_REQUIRE(digits_only, ConfigError, "{}='{}' is not a non-negative integer", name, value);
  errno = 0;
  // strtoull sets ERANGE on overflow; digits only, so no sign or prefix reaches it.
  unsigned long long parsed = std::strtoull(value.c_str(), nullptr, 10);
  EGM_REQUIRE(errno == 0 && parsed <= max, ConfigError, "{}='{}' is out of range (at most {})", name,
              value, max);
  return parsed;
}

std::optional<int> optional_int(const EnvLookup& lookup, const std::string& name) {
  auto value = lookup(name);
  if (!value) return std::nullopt;
  return static_cast<int>(parse_count(name, *value, std::numeric_limits<int>::max()));
}

}  // namespace

std::string SlurmEnv::summary() const {
  if (!job_id) return "not in a Slurm job";
  std::string line = fmt::format("job {} attempt {}", *job_id, restart_count);
  if (ntasks) line += fmt::format(", {} tasks", *ntasks);
  if (!nodelist.empty()) line += fmt::format(" on {}", nodelist);
  if (gpus_on_node) line += fmt::format(", {} GPUs on this node", *gpus_on_node);
  return line;
}

SlurmEnv read_slurm_env(const EnvLookup& lookup) {
  SlurmEnv env;
  // SLURM_JOBID is the older spelling some sites still export; the first one set wins.
  for (const char* name : {"SLURM_JOB_ID", "SLURM_JOBID"}) {
    if (auto value = lookup(name)) {
      env.job_id = parse_count(name, *value, std::numeric_limits<std::uint64_t>::max());
      break;
    }
  }
  // Slurm sets SLURM_RESTART_COUNT only after a requeue: absent means the first attempt.
  env.restart_count = optional_int(lookup, "SLURM_RESTART_COUNT").value_or(0);
  env.procid = optional_int(lookup, "SLURM_PROCID");
  env.local_id = optional_int(lookup, "SLURM_LOCALID");
  env.ntasks = optional_int(lookup, "SLURM_NTASKS");
  env.nodes = optional_int(lookup, "SLURM_JOB_NUM_NODES");
  env.nodelist = lookup("SLURM_JOB_NODELIST").value_or("");
  env.cpus_per_task = optional_int(lookup, "SLURM_CPUS_PER_TASK");
  env.gpus_on_node = optional_int(lookup, "SLURM_GPUS_ON_NODE");
  env.job_gpus = lookup("SLURM_JOB_GPUS").value_or("");
  return env;
}

// The process environment; tests pass their own lookup to the overload above.
SlurmEnv read_slurm_env() {
  return read_slurm_env([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace egm::slurm
