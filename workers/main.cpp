// egm-worker: ranks 1..N of a sweep. Trains the cells egm-coordinator assigns
// (see workers/README.md and src/protocol/protocol.h). Started by `egm sweep`,
// or by any MPI launch next to one egm-coordinator:
//   mpirun -np 1 egm-coordinator SPEC : -np N egm-worker --data input.txt
#include <CLI/CLI.hpp>

#include <cstdio>

#include "mpi/scope.h"
#include "protocol/mpi_transport.h"
#include "util/error.h"
#include "util/log.h"
#include "util/stop_signal.h"
#include "workers/mpi_run_group.h"
#include "workers/worker.h"

int main(int argc, char** argv) {
  egm::worker::WorkerOptions o;
  bool verbose = false;
  CLI::App app{"egm-worker: trains the cells of an egm sweep (start it with `egm sweep`)"};
  app.add_option("--data", o.data_path, "corpus file (default: $EGM_DATA, else data/tinyshakespeare/input.txt)");
  app.add_flag("-v,--verbose", verbose, "info and debug logging (default: warnings only, to keep the live view clean)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Warnings only by default: every worker shares the terminal with the coordinator's live view.
  egm::log::set_level(verbose ? egm::log::Level::debug : egm::log::Level::warn);

  // SIGUSR2/SIGTERM/SIGINT (mpirun forwards them to every rank) become a flag
  // the training loop polls: the run checkpoints and reports "interrupted".
  egm::install_stop_signal_handlers();
  try {
    egm::mpi::Scope mpi(&argc, &argv);
    int code = 0;
    {
      // Scoped, so the transport's communicator is freed before ~Scope calls MPI_Finalize.
      egm::protocol::MpiTransport transport;
      egm::worker::Worker worker(o, transport, egm::worker::mpi_run_groups());
      code = worker.run();
    }
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "egm-worker: error: %s\n", e.what());
    return 2;
  }
}
