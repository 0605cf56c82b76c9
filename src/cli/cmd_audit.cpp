// egm audit causality: its flags (the work: run_audit.cpp, in egm-torch; torch_verbs.h).
#include <memory>

#include "cli/commands.h"
#include "cli/torch_verbs.h"

namespace egm::cli {

void register_audit_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("audit", "audits of the paper's flaws");
  cmd->require_subcommand(1);
  auto* causality = cmd->add_subcommand(
      "causality", "max |logits(full window) - logits(prefix only)| per variant; exit 1 if any reads the future");
  auto a = std::make_shared<AuditCausalityArgs>();
  add_run_config_flags(causality, a->flags);
  causality->add_option("--windows", a->windows, "random windows to feed")->capture_default_str();
  causality->add_option("--tolerance", a->tolerance, "largest difference still called causal")->capture_default_str();
  causality->add_flag("--all", a->all, "audit every named variant");
  causality->add_flag("--at-init", a->at_init,
                      "audit the initial weights as they are (default: perturb every weight first, since at the "
                      "paper's init LayerNorm centring makes the wavelet gates constant and hides their leak)");
  causality->callback([a] { run_audit_causality(*a); });
}

}  // namespace egm::cli
