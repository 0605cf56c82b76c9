// egm train: its flags (the work: run_train.cpp, in egm-torch; torch_verbs.h).
#include <memory>

#include "cli/commands.h"
#include "cli/torch_verbs.h"
#include "launch/launch_options.h"

namespace egm::cli {

void register_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train one run (resumes from --out's checkpoint when there is one)");
  auto a = std::make_shared<TrainArgs>();
  add_run_config_flags(cmd, a->flags);
  cmd->add_option("--out", a->out, "run directory: config.json, metrics.jsonl, checkpoints")->required();
  launch::add_checkpoint_every_option(*cmd, a->checkpoint_interval);
  cmd->add_option("--log-every", a->log_interval, "progress record every N steps")
      ->capture_default_str()
      ->check(launch::positive_count());
  cmd->add_flag("-q,--quiet", a->quiet, "no progress lines");
  cmd->callback([a] { run_train(*a); });
}

}  // namespace egm::cli
