// egm train's work (egm-torch): one run, with progress lines, metrics.jsonl
// and checkpoints in --out. Its flags: cmd_train.cpp.
#include <cstdio>
#include <filesystem>

#include "cli/torch_verbs.h"
#include "data/corpus.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/stop_signal.h"

namespace egm::cli {

void run_train(const TrainArgs& a) {
  RunConfig config = resolve_run_config(a.flags);
  RuntimeOptions runtime = resolve_runtime(a.flags);
  runtime.out_dir = a.out;
  runtime.checkpoint_interval = a.checkpoint_interval;
  runtime.log_interval = a.log_interval;
  Corpus corpus = Corpus::load(runtime.data_path);
  config.model.vocab_size = corpus.vocab_size();

  make_dirs(a.out);
  JsonLinesSink jsonl((std::filesystem::path(a.out) / "metrics.jsonl").string());
  ProgressPrinter printer(stdout, config.train.max_steps);
  FanoutSink sink;
  sink.add(&jsonl);
  if (!a.quiet) sink.add(&printer);
  install_stop_signal_handlers();
  // The trainer checks any checkpoint already in --out against this config
  // first; only then is config.json (re)written, so a refused resume leaves
  // the directory as it was.
  // A folder trained on another corpus is refused (its record, corpus.json)
  // before its checkpoint is read: the vocabulary, and so the model, may differ.
  check_run_corpus(a.out, corpus);
  Trainer trainer(config, runtime, corpus, sink);
  const std::string config_path = (std::filesystem::path(a.out) / "config.json").string();
  atomic_write_file(config_path, to_json(config).dump(2) + "\n");
  if (!a.quiet) std::printf("config %s\n%s\n", config_path.c_str(), to_json(config).dump().c_str());

  const RunOutcome outcome = trainer.run([] { return stop_requested(); });
  if (outcome.status == Outcome::diverged) throw CLI::RuntimeError(kExitDiverged);
  if (outcome.status == Outcome::interrupted) throw CLI::RuntimeError(kExitInterrupted);
}

}  // namespace egm::cli
