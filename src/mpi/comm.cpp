// Comm: a duplicated or adopted MPI communicator, freed once by its owner, and
// its rank and size.
#include "mpi/comm.h"

#include <utility>

#include "mpi/check.h"

namespace egm::mpi {

Comm Comm::duplicate(MPI_Comm parent) {
  MPI_Comm comm = MPI_COMM_NULL;
  EGM_MPI_CHECK(MPI_Comm_dup(parent, &comm));
  return adopt(comm);
}

Comm Comm::adopt(MPI_Comm comm) {
  Comm owned(comm);
  // Errors on an owned communicator come back as codes, which EGM_MPI_CHECK turns into egm errors with a location.
  if (comm != MPI_COMM_NULL) EGM_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  return owned;
}

Comm::Comm(Comm&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    free();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
  }
  return *this;
}

Comm::~Comm() { free(); }

void Comm::free() {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After MPI_Finalize freeing is an error; a Comm that outlives the Scope just forgets its handle.
  if (!finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

int Comm::rank() const {
  int r = 0;
  EGM_MPI_CHECK(MPI_Comm_rank(comm_, &r));
  return r;
}

int Comm::size() const {
  int s = 0;
  EGM_MPI_CHECK(MPI_Comm_size(comm_, &s));
  return s;
}

}  // namespace egm::mpi
