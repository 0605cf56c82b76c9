// Facts about this process that errors, logs and run records carry.
#pragma once

#include <string>

namespace egm {

struct ProcessInfo {
  std::string host;
  int rank = -1;        // MPI world rank, -1 outside MPI
  int local_rank = -1;  // rank on this node (OMPI_COMM_WORLD_LOCAL_RANK / SLURM_LOCALID)
};

// Read once from the environment; MpiScope updates rank when MPI starts.
const ProcessInfo& process_info();
void set_process_rank(int rank);

// Reads an environment variable; empty when unset.
std::string env_or(const char* name, const std::string& fallback = "");

}  // namespace egm
