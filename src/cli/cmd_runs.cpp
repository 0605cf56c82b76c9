// Placeholder until its issue lands: the verb exists so the CLI links.
#include "cli/commands.h"
#include "util/error.h"

namespace egm::cli {

void register_runs_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("runs", "(not built yet)");
  cmd->callback([] { EGM_THROW(Error, "egm runs is not built yet"); });
}

}  // namespace egm::cli
