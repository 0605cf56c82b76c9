// An owned MPI communicator (RAII): freed when the owner goes, so a component
// (the sweep protocol, one run's gradient averaging, a data-parallel group)
// never shares message matching with anything else. Every communicator it
// owns has MPI_ERRORS_RETURN, so failures reach EGM_MPI_CHECK (check.h).
#pragma once

#include <mpi.h>

namespace egm::mpi {

class Comm {
 public:
  Comm() = default;
  // Duplicates `parent` (collective over it).
  static Comm duplicate(MPI_Comm parent);
  // Takes ownership of a communicator just created (MPI_Comm_create_group, ...);
  // MPI_COMM_NULL stays an empty Comm.
  static Comm adopt(MPI_Comm comm);
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();  // MPI_Comm_free, unless MPI is already finalised

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

 private:
  explicit Comm(MPI_Comm comm) : comm_(comm) {}
  void free();
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace egm::mpi
