#include "sweep/mpi_scope.h"

#include <utility>

#include "util/error.h"
#include "util/log.h"
#include "util/process_info.h"

namespace egm::sweep {
namespace {
bool g_scope_alive = false;
}

void check_mpi(int rc, const char* call, const char* file, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  detail::raise<Error>(file, line, fmt::format("{} failed: {}", call, std::string(text, static_cast<size_t>(length))));
}

MpiComm MpiComm::duplicate(MPI_Comm parent) {
  MPI_Comm comm = MPI_COMM_NULL;
  EGM_MPI_CHECK(MPI_Comm_dup(parent, &comm));
  EGM_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  return MpiComm(comm);
}

MpiComm::MpiComm(MpiComm&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}

MpiComm& MpiComm::operator=(MpiComm&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
  }
  return *this;
}

MpiComm::~MpiComm() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

int MpiComm::rank() const {
  int r = 0;
  EGM_MPI_CHECK(MPI_Comm_rank(comm_, &r));
  return r;
}

int MpiComm::size() const {
  int s = 0;
  EGM_MPI_CHECK(MPI_Comm_size(comm_, &s));
  return s;
}

MpiScope::MpiScope(int* argc, char*** argv) {
  EGM_CHECK(!g_scope_alive, "MPI is already initialised by another MpiScope");
  int initialized = 0;
  MPI_Initialized(&initialized);
  EGM_CHECK(!initialized, "MPI was initialised outside MpiScope");
  int provided = 0;
  EGM_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  g_scope_alive = true;
  if (provided < MPI_THREAD_FUNNELED) log::warn("MPI provides thread level {} < FUNNELED", provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  set_process_rank(rank_);
}

MpiScope::~MpiScope() {
  MPI_Finalize();
  g_scope_alive = false;
}

void MpiScope::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; keep [[noreturn]] honest
}

}  // namespace egm::sweep
