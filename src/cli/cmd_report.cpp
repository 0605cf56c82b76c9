// Placeholder until its issue lands: the verb exists so the CLI links.
#include "cli/commands.h"
#include "util/error.h"

namespace egm::cli {

void register_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("report", "(not built yet)");
  cmd->callback([] { EGM_THROW(Error, "egm report is not built yet"); });
}

}  // namespace egm::cli
