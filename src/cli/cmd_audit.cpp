// egm audit causality: does a variant read the future? Compares the logits at
// every position from the full window with those from the prefix alone.
#include <cstdio>

#include "cli/commands.h"
#include "cli/run_options.h"
#include "config/variants.h"
#include "data/batch_sampler.h"
#include "data/corpus.h"
#include "data/corpus_source.h"
#include "model/causality.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/files.h"
#include "util/torch_compat.h"

namespace egm::cli {

// Exit status: 0 when every audited variant is causal, 1 when any reads the future.
inline constexpr int kExitNonCausal = 1;

void register_audit_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("audit", "audits of the paper's flaws");
  cmd->require_subcommand(1);
  auto* causality = cmd->add_subcommand(
      "causality", "max |logits(full window) - logits(prefix only)| per variant; exit 1 if any reads the future");
  auto flags = std::make_shared<RunConfigFlags>();
  auto windows = std::make_shared<int64_t>(4);
  auto tolerance = std::make_shared<double>(1e-4);
  auto all = std::make_shared<bool>(false);
  auto at_init = std::make_shared<bool>(false);
  add_run_config_flags(causality, *flags);
  causality->add_option("--windows", *windows, "random windows to feed")->capture_default_str();
  causality->add_option("--tolerance", *tolerance, "largest difference still called causal")->capture_default_str();
  causality->add_flag("--all", *all, "audit every named variant");
  causality->add_flag("--at-init", *at_init,
                      "audit the initial weights as they are (default: perturb every weight first, since at the "
                      "paper's init LayerNorm centring makes the wavelet gates constant and hides their leak)");
  causality->callback([=] {
    std::vector<std::string> variants;
    if (*all) {
      for (const auto& v : named_variants()) variants.push_back(v.name);
    } else {
      EGM_REQUIRE(!flags->variant.empty(), ConfigError, "give --variant V or --all");
      variants.push_back(flags->variant);
    }
    // Real text when the corpus is there (random tokens otherwise: causality does not depend on it).
    const std::string corpus_path = locate_corpus(flags->data);
    std::optional<Corpus> corpus;
    if (file_exists(corpus_path)) corpus = Corpus::load(corpus_path);
    torch::set_num_threads(std::max(1, flags->threads));
    const torch::Device device = parse_device(flags->device);

    std::printf("%-22s %-12s %-14s %-9s %s\n", "variant", "max |diff|", "worst position", "verdict", "expected");
    bool any_non_causal = false;
    for (const std::string& name : variants) {
      RunConfigFlags f = *flags;
      f.variant = name;
      RunConfig config = resolve_run_config(f);
      if (corpus) config.model.vocab_size = corpus->vocab_size();
      GPT model = build_model(config.model, config.train.seed);
      if (!*at_init) {
        torch::NoGradGuard no_grad;
        auto gen = compat::make_cpu_generator(config.train.seed + 1);
        for (auto& p : model->parameters()) p.add_(torch::randn(p.sizes(), gen) * 0.1);
      }
      model->to(device);
      torch::Tensor idx;
      if (corpus) {
        BatchSampler sampler(*corpus, config.model.block_size, config.train.seed);
        idx = sampler.eval_batch(Split::val, 0, 0, *windows).x;
      } else {
        idx = torch::randint(config.model.vocab_size, {*windows, config.model.block_size}, torch::kInt64);
      }
      CausalityReport r = audit_causality(*model, idx.to(device));
      const bool causal = r.causal(*tolerance);
      any_non_causal |= !causal;
      const bool expected_causal = !attention_sees_future(resolve_variant(name).attention);
      std::printf("%-22s %-12.3e %-14lld %-9s %s\n", name.c_str(), r.max_abs_diff,
                  static_cast<long long>(r.worst_position), causal ? "causal" : "NON-CAUSAL",
                  expected_causal == causal ? "yes" : "NO: unexpected");
    }
    if (any_non_causal) throw CLI::RuntimeError(kExitNonCausal);
  });
}

}  // namespace egm::cli
