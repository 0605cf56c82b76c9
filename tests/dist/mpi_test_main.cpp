// main() for the test binaries that run under mpirun: MPI around GoogleTest.
// Every rank runs every test (the tests call collectives in the same order on
// all ranks); ranks above 0 print only failures, so the log reads like one
// rank's. A failure on any rank fails the job (mpirun's exit status).
#include <gtest/gtest.h>
#include <mpi.h>

#include "util/process_info.h"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  egm::set_process_rank(rank);
  if (rank > 0) GTEST_FLAG_SET(brief, true);  // before InitGoogleTest, which picks the printer
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
