// This process's rank and the job's size in MPI_COMM_WORLD, for the tests that
// run under mpirun (mpi_test_main.cpp initialises MPI).
#pragma once

#include <mpi.h>

namespace egm::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

}  // namespace egm::test
