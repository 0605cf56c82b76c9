// RAII over MPI for the sweep binaries: MpiScope initialises MPI once
// (MPI_Init_thread, FUNNELED: only the main thread calls MPI) and finalises it
// when it goes out of scope; MpiComm owns a duplicated communicator, so the
// sweep protocol (and later a run's data-parallel group) never shares message
// matching with anything else on MPI_COMM_WORLD. MPI errors become egm::Error
// with MPI's own text (the duplicates use MPI_ERRORS_RETURN).
#pragma once

#include <mpi.h>

#include <string>

namespace egm::sweep {

// Throws egm::Error "MPI_Xxx failed: <MPI's error string>" when rc != MPI_SUCCESS.
void check_mpi(int rc, const char* call, const char* file, int line);
#define EGM_MPI_CHECK(call) ::egm::sweep::check_mpi((call), #call, __FILE__, __LINE__)

class MpiComm {
 public:
  MpiComm() = default;
  // Duplicates `parent` (collective over it) and sets MPI_ERRORS_RETURN on the copy.
  static MpiComm duplicate(MPI_Comm parent);
  MpiComm(MpiComm&& other) noexcept;
  MpiComm& operator=(MpiComm&& other) noexcept;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  ~MpiComm();

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

 private:
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {}
  MPI_Comm comm_ = MPI_COMM_NULL;
};

class MpiScope {
 public:
  // Initialises MPI (once per process; a second scope is an error) and sets
  // egm::set_process_rank so errors and logs carry the world rank.
  MpiScope(int* argc, char*** argv);
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
  ~MpiScope();  // MPI_Finalize (waits for the other ranks to reach it too)

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }
  // Ends every rank of the job (MPI_Abort) with `code`: the last resort when
  // the protocol cannot shut the job down in order.
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace egm::sweep
