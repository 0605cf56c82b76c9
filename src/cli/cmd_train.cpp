// egm train: one run, with progress lines, metrics.jsonl and checkpoints in --out.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "data/corpus.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/stop_signal.h"

namespace egm::cli {

// Exit codes of `egm train` (documented in the README).
inline constexpr int kExitDiverged = 3;
inline constexpr int kExitInterrupted = 75;  // EX_TEMPFAIL: run it again to resume

void register_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train one run (resumes from --out's checkpoint when there is one)");
  auto flags = std::make_shared<RunConfigFlags>();
  auto out = std::make_shared<std::string>();
  auto checkpoint_interval = std::make_shared<int64_t>(0);
  auto log_interval = std::make_shared<int64_t>(10);
  auto quiet = std::make_shared<bool>(false);
  add_run_config_flags(cmd, *flags);
  cmd->add_option("--out", *out, "run directory: config.json, metrics.jsonl, checkpoints")->required();
  cmd->add_option("--checkpoint-every", *checkpoint_interval, "also checkpoint every N steps (default: at each eval)");
  cmd->add_option("--log-every", *log_interval, "progress record every N steps")->capture_default_str();
  cmd->add_flag("-q,--quiet", *quiet, "no progress lines");
  cmd->callback([=] {
    RunConfig config = resolve_run_config(*flags);
    RuntimeOptions runtime = resolve_runtime(*flags);
    runtime.out_dir = *out;
    runtime.checkpoint_interval = *checkpoint_interval;
    runtime.log_interval = *log_interval;
    Corpus corpus = Corpus::load(runtime.data_path);
    config.model.vocab_size = corpus.vocab_size();

    make_dirs(*out);
    JsonLinesSink jsonl((std::filesystem::path(*out) / "metrics.jsonl").string());
    ProgressPrinter printer(stdout, config.train.max_steps);
    FanoutSink sink;
    sink.add(&jsonl);
    if (!*quiet) sink.add(&printer);
    install_stop_signal_handlers();
    // The trainer checks any checkpoint already in --out against this config
    // first; only then is config.json (re)written, so a refused resume leaves
    // the directory as it was.
    Trainer trainer(config, runtime, corpus, sink);
    const std::string config_path = (std::filesystem::path(*out) / "config.json").string();
    atomic_write_file(config_path, to_json(config).dump(2) + "\n");
    if (!*quiet) std::printf("config %s\n%s\n", config_path.c_str(), to_json(config).dump().c_str());

    RunResult r = trainer.run([] { return stop_requested(); });
    if (r.status == "diverged") throw CLI::RuntimeError(kExitDiverged);
    if (r.status == "interrupted") throw CLI::RuntimeError(kExitInterrupted);
  });
}

}  // namespace egm::cli
