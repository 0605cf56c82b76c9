// GPTImpl: embeddings, position encoding, blocks, final norm and the tied head;
// the loss, and the learned gate and MoPE parameters it reports.
#include "model/gpt.h"

#include <algorithm>

#include "config/variants.h"
#include "model/attention_variants.h"
#include "model/kernels/counter_dropout.h"
#include "model/init.h"
#include "util/error.h"

namespace egm {

GPTImpl::GPTImpl(const ModelConfig& config) : config_(config) {
  // A model built in code (tests, bench) is checked as a config from a file would be: a bad head size fails here, not in a kernel.
  validate(RunConfig{"", config, TrainConfig{}});
  VariantInfo v = resolve_variant(config.variant);
  attention_kind_ = v.attention;
  position_kind_ = v.position;
  wte = register_module("wte", torch::nn::Embedding(config.vocab_size, config.d_model));
  // Registered under a name per kind, so parameter names (and with them init seeds and checkpoints) match across variants.
  pos = register_module(position_module_name(position_kind_), make_position_encoding(position_kind_, config));
  h = register_module("h", torch::nn::ModuleList());
  // The layer index reaches each attention so the parameters it reports name their layer.
  for (int64_t i = 0; i < config.n_layer; ++i) h->push_back(Block(config, i, attention_kind_));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.d_model}).eps(1e-5)));
  drop = register_module("drop", torch::nn::Dropout(config.dropout));
}

torch::Tensor GPTImpl::forward(const torch::Tensor& idx) {
  const int64_t T = idx.size(1);
  // Longer than block_size has no position table rows (learned, sincos) and was never trained.
  EGM_REQUIRE(T >= 1 && T <= config_.block_size, ConfigError, "sequence length {} is outside [1, block_size={}]", T,
              config_.block_size);
  torch::Tensor x = wte(idx);                              // [B, T, d]
  torch::Tensor table = pos->input_table(T, idx.device());  // [T, d] or undefined
  if (table.defined()) x = x + table;
  x = dropout(x, drop);
  // Built once per length and device and shared by every layer (masks, RoPE tables, ALiBi bias).
  const AttentionContext& ctx = pos->cached_attention_context(T, idx.device());
  for (const auto& block : *h) x = block->as<BlockImpl>()->forward(x, ctx);
  x = ln_f(x);
  return torch::matmul(x, wte->weight.t());  // tied LM head: [B, T, vocab]
}

torch::Tensor GPTImpl::loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  // In fp32 whatever the autocast dtype: the log-softmax over the vocabulary loses too much in bf16.
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32),
                                              targets.reshape({-1}));
}

LearnedParams GPTImpl::learned_params() const {
  LearnedParams out;
  pos->report_params(out);
  for (const auto& block : *h) block->as<BlockImpl>()->attn->report_params(out);
  return out;
}

LearnedParams GPTImpl::gate_open_shares(const torch::Tensor& idx) {
  std::vector<std::pair<int64_t, EnergyGateAttentionImpl*>> gates;
  for (size_t l = 0; l < h->size(); ++l)
    if (auto* g = dynamic_cast<EnergyGateAttentionImpl*>(h[l]->as<BlockImpl>()->attn.get()))
      gates.emplace_back(static_cast<int64_t>(l), g);
  LearnedParams out;
  if (gates.empty()) return out;

  // Eval mode for the probe: dropout off, so the shares measure the gate itself.
  const bool was_training = is_training();
  eval();
  // The gates record their open share during this one forward only; the flag is reset below.
  for (auto& [layer, g] : gates) g->probe_gate = true;
  {
    torch::NoGradGuard no_grad;
    forward(idx);
  }
  for (auto& [layer, g] : gates) {
    g->probe_gate = false;
    if (!g->gate_open_share.defined()) continue;  // a gate kind without the probe
    for (int64_t head = 0; head < g->gate_open_share.size(0); ++head)
      out.push_back({"ega", layer, head, "gate_open_share", g->gate_open_share[head].item<double>()});
    g->gate_open_share = torch::Tensor();
  }
  train(was_training);
  return out;
}

GPTImpl::SdpaUse GPTImpl::sdpa_use() const {
  SdpaUse use;
  auto add = [](std::vector<std::string>& names, const char* name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
  };
  for (const auto& block : *h) {
    const std::optional<SdpaResult>& r = block->as<BlockImpl>()->attn->last_sdpa();
    // A layer that did not go through SDPA in training (the CPU kernels, the eager path) reports nothing.
    if (!r) continue;
    add(use.backends, sdpa_backend_name(r->backend));
    for (SdpaBackend b : r->refused) add(use.refused, sdpa_backend_name(b));
  }
  return use;
}

int64_t GPTImpl::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

// Construction then the seeded initialisation: LibTorch's own default init is overwritten for every parameter.
GPT build_model(const ModelConfig& config, uint64_t seed) {
  GPT model(config);
  initialize_parameters(*model, seed);
  return model;
}

}  // namespace egm
