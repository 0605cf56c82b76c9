// egm: train, sweep, analyse and report the EGA-MORLET model zoo.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <optional>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/torch_verbs.h"
#include "cli/version.h"
#include "util/error.h"
#include "util/log.h"
#include "util/terminal_text.h"

int main(int argc, char** argv) {
  egm::cli::set_command_line(argc, argv);  // for the exec into egm-torch (torch_verbs.h)
  // --version alone, before anything else (version.h); with other arguments, refused.
  if (const std::optional<int> status = egm::cli::answer_version_flag(argc, argv)) return *status;
  CLI::App app{"egm: the EGA-MORLET experiment orchestrator"};
  // Exactly one verb per call: egm status, egm sweep, ...
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "debug logging, and error locations");
  // Answered before parsing (answer_version_flag); declared here for --help.
  app.add_flag("--version", "print egm's commit, LibTorch, CUDA and schema versions, and exit (alone)");
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
  register_serve_command(app);
  register_export_command(app);
  register_merge_command(app);
  register_plan_command(app);
  register_paper_command(app);
  // Every INT, UINT and FLOAT flag above, read in decimal and within its type (number_flags.h).
  read_numbers_as_decimal(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a verb's own exit status (egm audit: 1 reads the future)
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // A bad flag is bad input like any other: one line, exit 2 (README, "Exit status").
    std::fprintf(stderr, "egm: error: %s (see egm --help)\n", e.what());
    return 2;
  } catch (const egm::Error& e) {
    // The SQL a database error ran follows only with --verbose: the refusal is
    // its first line (README, "Exit status"). An error may quote a database's
    // text (a sweep name, a host): control bytes escaped.
    const std::string what = egm::terminal_safe(e.what());
    const size_t sql = what.find("\n  SQL: ");
    std::fprintf(stderr, "egm: error: %s\n", what.substr(0, sql).c_str());
    if (verbose && sql != std::string::npos) std::fprintf(stderr, "%s\n", what.substr(sql + 1).c_str());
    if (verbose && !e.where().empty()) std::fprintf(stderr, "  at %s\n", e.where().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "egm: error: %s\n", egm::terminal_safe(e.what()).c_str());
    return 2;
  }
  return 0;
}
