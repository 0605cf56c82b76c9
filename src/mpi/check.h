// The one check for MPI calls: a failing call becomes an egm::Error whose
// message has the call and MPI's own error text, and whose location has
// file:line, host and MPI world rank. Works only on communicators with
// MPI_ERRORS_RETURN (mpi::Comm sets it on every communicator it owns); MPI's
// default handler aborts the job before we could see rc.
#pragma once

#include <mpi.h>

#include <string>

namespace egm::mpi {

// Throws egm::Error "<call> failed: <MPI_Error_string(rc)>" unless rc == MPI_SUCCESS.
void check(int rc, const char* call, const char* file, int line);

// MPI's text for an error code (MPI_Error_string).
std::string error_string(int rc);

// This process's rank in MPI_COMM_WORLD, or -1 before MPI_Init / after MPI_Finalize.
int world_rank();

// "file:line on host (rank N)": the rank from egm::process_info() when
// mpi::Scope has set it, else asked of MPI.
std::string error_location(const char* file, int line);

}  // namespace egm::mpi

#define EGM_MPI_CHECK(call) ::egm::mpi::check((call), #call, __FILE__, __LINE__)
