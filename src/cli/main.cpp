// egm: train, sweep, analyse and report the EGA-MORLET model zoo.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "util/error.h"
#include "util/log.h"

int main(int argc, char** argv) {
  CLI::App app{"egm: the EGA-MORLET experiment orchestrator"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug logging, and error locations");
  app.parse_complete_callback([&] {
    if (verbose) egm::log::set_level(egm::log::Level::debug);
  });

  using namespace egm::cli;
  register_train_command(app);
  register_bench_command(app);
  register_audit_command(app);
  register_data_command(app);
  register_sweep_command(app);
  register_status_command(app);
  register_runs_command(app);
  register_query_command(app);
  register_analyze_command(app);
  register_report_command(app);
  register_submit_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const egm::Error& e) {
    std::fprintf(stderr, "egm: error: %s\n", e.what());
    if (verbose && !e.where().empty()) std::fprintf(stderr, "  at %s\n", e.where().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "egm: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
