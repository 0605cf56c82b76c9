// egm audit causality's work (egm-torch): does a variant read the future?
// Compares the logits at every position from the full window with those from
// the prefix alone. Its flags: cmd_audit.cpp.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "cli/torch_verbs.h"
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

void run_audit_causality(const AuditCausalityArgs& a) {
  std::vector<std::string> variants;
  if (a.all) {
    for (const auto& v : named_variants()) variants.push_back(v.name);
  } else {
    EGM_REQUIRE(!a.flags.variant.empty(), ConfigError, "give --variant V or --all");
    variants.push_back(a.flags.variant);
  }
  // Real text when the corpus is there (random tokens otherwise: causality does not depend on it).
  const std::string corpus_path = locate_corpus(a.flags.data);
  std::optional<Corpus> corpus;
  if (file_exists(corpus_path)) corpus = Corpus::load(corpus_path);
  torch::set_num_threads(std::max(1, a.flags.threads));
  const torch::Device device = torch_device(a.flags.device);

  std::printf("%-22s %-12s %-14s %-9s %s\n", "variant", "max |diff|", "worst position", "verdict", "expected");
  bool any_non_causal = false;
  for (const std::string& name : variants) {
    RunConfigFlags f = a.flags;
    f.variant = name;
    RunConfig config = resolve_run_config(f);
    if (corpus) config.model.vocab_size = corpus->vocab_size();
    GPT model = build_model(config.model, config.train.seed);
    if (!a.at_init) {
      torch::NoGradGuard no_grad;
      auto gen = compat::make_cpu_generator(config.train.seed + 1);
      for (auto& p : model->parameters()) p.add_(torch::randn(p.sizes(), gen) * 0.1);
    }
    model->to(device);
    torch::Tensor idx;
    if (corpus) {
      BatchSampler sampler(*corpus, config.model.block_size, config.train.seed);
      idx = sampler.eval_batch(Split::val, 0, 0, a.windows).x;
    } else {
      idx = torch::randint(config.model.vocab_size, {a.windows, config.model.block_size}, torch::kInt64);
    }
    CausalityReport r = audit_causality(*model, idx.to(device));
    const bool causal = r.causal(a.tolerance);
    any_non_causal |= !causal;
    const bool expected_causal = !attention_sees_future(resolve_variant(name).attention);
    std::printf("%-22s %-12.3e %-14lld %-9s %s\n", name.c_str(), r.max_abs_diff,
                static_cast<long long>(r.worst_position), causal ? "causal" : "NON-CAUSAL",
                expected_causal == causal ? "yes" : "NO: unexpected");
  }
  if (any_non_causal) throw CLI::RuntimeError(kExitNonCausal);
}

}  // namespace egm::cli
