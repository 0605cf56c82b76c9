#include "dist/device_placement.h"

#include <cerrno>
#include <cstdlib>

#include "dist/mpi_check.h"
#include "util/error.h"

namespace egm::dist {
namespace {

constexpr const char* kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"};

int parse_local_rank(const std::string& name, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(value.c_str(), &end, 10);
  EGM_REQUIRE(!value.empty() && end && *end == '\0' && errno == 0 && v >= 0 && v <= 1 << 20, ConfigError,
              "{}='{}' is not a local rank (a non-negative integer); the launcher sets it, unset it otherwise", name,
              value);
  return static_cast<int>(v);
}

}  // namespace

std::optional<LocalRank> local_rank_from_env(const std::map<std::string, std::string>& env) {
  for (const char* name : kLocalRankVariables) {
    auto it = env.find(name);
    if (it != env.end()) return LocalRank{parse_local_rank(name, it->second), name};
  }
  return std::nullopt;
}

std::optional<LocalRank> local_rank_from_env() {
  std::map<std::string, std::string> env;
  for (const char* name : kLocalRankVariables)
    if (const char* value = std::getenv(name)) env[name] = value;
  return local_rank_from_env(env);
}

int node_local_rank(MPI_Comm comm) {
  int rank = 0;
  EGM_DIST_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node = MPI_COMM_NULL;
  EGM_DIST_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local = 0;
  const int rc = MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  EGM_DIST_MPI_CHECK(rc);
  return local;
}

LocalRank local_rank(MPI_Comm comm) {
  const int from_mpi = node_local_rank(comm);
  if (auto env = local_rank_from_env()) return *env;
  return {from_mpi, "MPI_COMM_TYPE_SHARED"};
}

}  // namespace egm::dist
