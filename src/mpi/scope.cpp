// Scope: MPI_Init_thread (FUNNELED) once per process, MPI_Finalize when it goes,
// and abort for a job that cannot end in order.
#include "mpi/scope.h"

#include <mpi.h>

#include <cstdlib>

#include "mpi/check.h"
#include "util/error.h"
#include "util/log.h"
#include "util/process_info.h"

namespace egm::mpi {
namespace {
// MPI may be initialised once per process: a second Scope is a bug, refused rather than undefined.
bool g_scope_alive = false;
}

Scope::Scope(int* argc, char*** argv) {
  EGM_CHECK(!g_scope_alive, "MPI is already initialised by another mpi::Scope");
  int initialized = 0;
  MPI_Initialized(&initialized);
  EGM_CHECK(!initialized, "MPI was initialised outside mpi::Scope");
  int provided = 0;
  // FUNNELED: other threads exist (LibTorch's thread pools), but only the main thread calls MPI.
  EGM_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  g_scope_alive = true;
  if (provided < MPI_THREAD_FUNNELED) log::warn("MPI provides thread level {} < FUNNELED", provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // From here on every log line and error carries this rank.
  set_process_rank(rank_);
}

// Collective: every rank must reach it; a rank that cannot uses abort() instead.
Scope::~Scope() {
  MPI_Finalize();
  g_scope_alive = false;
}

void Scope::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; keep [[noreturn]] honest
}

}  // namespace egm::mpi
