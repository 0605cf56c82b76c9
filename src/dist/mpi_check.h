// Error checking for MPI calls in egm_dist: a failing call becomes an
// egm::Error whose message has the call and MPI's own error text, and whose
// location has file:line, host and MPI world rank. Works only on
// communicators with MPI_ERRORS_RETURN (MpiCommunicator sets it on its
// duplicate); MPI's default handler aborts the job before we could see rc.
#pragma once

#include <mpi.h>

#include <string>

namespace egm::dist {

// Throws egm::Error "<call> failed: <MPI_Error_string(rc)>" unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* call, const char* file, int line);

// MPI's text for an error code (MPI_Error_string).
std::string mpi_error_string(int rc);

// This process's rank in MPI_COMM_WORLD, or -1 before MPI_Init / after MPI_Finalize.
int mpi_world_rank();

// "file:line on host (rank N)" for errors raised in egm_dist: the rank from
// egm::process_info() when the sweep has set it, else asked of MPI.
std::string error_location(const char* file, int line);

}  // namespace egm::dist

#define EGM_DIST_MPI_CHECK(call) ::egm::dist::check_mpi((call), #call, __FILE__, __LINE__)
