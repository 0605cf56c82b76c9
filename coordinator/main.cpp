// egm-coordinator: rank 0 of a sweep. Launched next to the workers:
//   mpirun -np 1 egm-coordinator SPEC [options] : -np N egm-worker [--data PATH]
// (`egm sweep` builds that command). Exit codes: 0 every cell done, 1 some
// cell failed for good, 2 error, 75 interrupted by a signal (resume by running
// the same command again). See coordinator/README.md.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "coordinator/coordinator.h"
#include "coordinator/failure_injection.h"
#include "launch/launch_options.h"
#include "mpi/scope.h"
#include "protocol/mpi_transport.h"
#include "util/error.h"
#include "util/log.h"
#include "util/stop_signal.h"

int main(int argc, char** argv) {
  using namespace egm::coordinator;
  CoordinatorOptions o;
  std::string view = "auto";
  bool verbose = false;
  CLI::App app{"egm-coordinator: rank 0 of an egm sweep (start it with `egm sweep`)"};
  egm::launch::add_launch_flags(app, o);  // the flags egm sweep passes on (launch/launch_options.h)
  app.add_option("--log-every", o.log_interval, "progress record every N steps")->capture_default_str();
  app.add_option("--view", view, "live view: auto (a terminal: redraw in place), tty, plain (a status line every "
                                 "--status-every seconds) or none")
      ->capture_default_str();
  app.add_option("--status-every", o.plain_interval_s, "seconds between plain status lines")->capture_default_str();
  app.add_flag("-v,--verbose", verbose, "debug logging");
  try {
    app.parse(argc, argv);
    o.view = parse_view_mode(view);
    o.injected_failures = injected_failures_from_env();  // test-only
  } catch (const CLI::ParseError& e) {
    // --help exits 0; a bad flag is an error like any other (2), not CLI11's own code.
    return app.exit(e) == 0 ? 0 : kExitError;
  } catch (const egm::Error& e) {
    std::fprintf(stderr, "egm-coordinator: error: %s\n", e.what());
    return kExitError;
  }
  if (verbose) egm::log::set_level(egm::log::Level::debug);

  // Before MPI starts, so a signal that arrives early is not lost either.
  egm::install_stop_signal_handlers();
  try {
    egm::mpi::Scope mpi(&argc, &argv);
    int code = kExitError;
    bool in_order = true;
    {
      // Scoped: the transport's duplicated communicator must be freed before MPI_Finalize runs in ~Scope.
      egm::protocol::MpiTransport transport;
      Coordinator coordinator(o, transport);
      code = coordinator.run();
      in_order = coordinator.workers_left_in_order();
    }
    // A worker that did not leave would hang MPI_Finalize: end the job instead.
    if (!in_order) mpi.abort(code);
    return code;
  } catch (const std::exception& e) {
    // Errors before or outside the Coordinator (MPI_Init, the transport); the Coordinator reports its own.
    std::fprintf(stderr, "egm-coordinator: error: %s\n", e.what());
    return kExitError;
  }
}
