// MPI for a process: Scope initialises MPI once (MPI_Init_thread, FUNNELED:
// only the main thread calls MPI) and finalises it when it goes out of scope.
#pragma once

namespace egm::mpi {

class Scope {
 public:
  // Initialises MPI (once per process; a second scope is an error) and sets
  // egm::set_process_rank so errors and logs carry the world rank.
  Scope(int* argc, char*** argv);
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope();  // MPI_Finalize (waits for the other ranks to reach it too)

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }
  // Ends every rank of the job (MPI_Abort) with `code`: the last resort when
  // the protocol cannot shut the job down in order.
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace egm::mpi
