// EGM_MPI_CHECK's body: MPI's error text for a failing call, with file:line,
// host and world rank.
#include "mpi/check.h"

#include "util/error.h"
#include "util/process_info.h"

namespace egm::mpi {

std::string error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  // A code that did not come from MPI has no text; the number still helps.
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "unknown MPI error " + std::to_string(rc);
  return std::string(text, static_cast<size_t>(length));
}

// -1 outside MPI's lifetime: MPI_Comm_rank before MPI_Init or after MPI_Finalize is an error.
int world_rank() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::string error_location(const char* file, int line) {
  std::string where = detail::location(file, line);
  // location() names the rank only once mpi::Scope has set it; ask MPI otherwise.
  if (process_info().rank < 0) {
    const int rank = world_rank();
    if (rank >= 0) where += fmt::format(" (rank {})", rank);
  }
  return where;
}

// Only useful on communicators with MPI_ERRORS_RETURN (mpi::Comm sets it); the default handler aborts first.
void check(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  throw Error(fmt::format("{} failed: {}", call, error_string(rc)), error_location(file, line));
}

}  // namespace egm::mpi
