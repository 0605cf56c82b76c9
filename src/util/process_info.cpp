#include "util/process_info.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace egm {
namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}

ProcessInfo read_process_info() {
  ProcessInfo info;
  char host[HOST_NAME_MAX + 1] = {0};
  if (gethostname(host, sizeof host) == 0) info.host = host;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (int r = env_int(name); r >= 0) {
      info.rank = r;
      break;
    }
  }
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (int r = env_int(name); r >= 0) {
      info.local_rank = r;
      break;
    }
  }
  return info;
}

ProcessInfo& mutable_info() {
  static ProcessInfo info = read_process_info();
  return info;
}

}  // namespace

const ProcessInfo& process_info() { return mutable_info(); }
void set_process_rank(int rank) { mutable_info().rank = rank; }

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

}  // namespace egm
