// Seeded initialisation: each parameter drawn from a generator seeded by the run's
// seed and its name's FNV-1a hash, so variants share the weights they have in common.
#include "model/init.h"

#include <set>

#include "model/gpt.h"
#include "util/error.h"
#include "util/seed.h"
#include "util/torch_compat.h"

namespace egm {

namespace {
// GPT-2's initialisation scale: normal with std 0.02.
constexpr double kInitStd = 0.02;
}

// FNV-1a's 64-bit offset basis and prime: a fixed hash, the same on every platform and build (std::hash is not).
uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

void seeded_normal_(torch::Tensor& param, uint64_t seed, const std::string& name, double std) {
  torch::NoGradGuard no_grad;
  at::Generator gen = compat::make_cpu_generator(derive_seed(seed, fnv1a64(name)));
  // Drawn on the CPU in fp32 and copied, so a parameter gets the same values on any device.
  torch::Tensor values = torch::empty(param.sizes(), torch::kFloat32);
  values.normal_(0.0, std, gen);
  param.copy_(values);
}

namespace {

// The scale-initialised-heads ablation: Q and K rows of head h get std
// 0.02 * (1 + (h mod 4)/4); V rows keep 0.02.
void scale_qk_rows(torch::Tensor& c_attn_weight, const ModelConfig& c) {
  torch::NoGradGuard no_grad;
  const int64_t d = c.d_model, hs = c.head_size();
  // c_attn's weight rows are [Q | K | V], d rows each; head h owns rows h*hs .. h*hs + hs - 1 of each part.
  for (int64_t part = 0; part < 2; ++part) {  // Q, K
    for (int64_t h = 0; h < c.n_head; ++h) {
      double factor = 1.0 + static_cast<double>(h % 4) / 4.0;
      c_attn_weight.narrow(0, part * d + h * hs, hs).mul_(factor);
    }
  }
}

}  // namespace

void initialize_parameters(GPTImpl& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  // The parameters initialised so far, by identity: the check at the end finds any parameter no rule covered.
  std::set<const void*> done;
  auto mark = [&](const torch::Tensor& t) { done.insert(t.unsafeGetTensorImpl()); };

  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::string& prefix = item.key();
    torch::nn::Module& m = *item.value();
    // The full parameter name seeds the draw: a parameter shared by two variants gets the same values in both.
    auto full = [&](const std::string& local) { return prefix + "." + local; };
    if (auto* lin = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
      seeded_normal_(lin->weight, seed, full("weight"), kInitStd);
      mark(lin->weight);
      if (lin->bias.defined()) {
        lin->bias.zero_();
        mark(lin->bias);
      }
    } else if (auto* emb = dynamic_cast<torch::nn::EmbeddingImpl*>(&m)) {
      seeded_normal_(emb->weight, seed, full("weight"), kInitStd);
      mark(emb->weight);
    } else if (auto* ln = dynamic_cast<torch::nn::LayerNormImpl*>(&m)) {
      ln->weight.fill_(1.0);
      ln->bias.zero_();
      mark(ln->weight);
      mark(ln->bias);
    } else if (auto* pe = dynamic_cast<PositionEncodingImpl*>(&m)) {
      // The encoding's own rule first (MoPE's scales, for one); only a table named "weight" is redrawn.
      pe->reset_parameters();
      for (auto& p : pe->named_parameters(/*recurse=*/false)) {
        if (p.key() == "weight") seeded_normal_(p.value(), seed, full("weight"), kInitStd);  // learned tables
        mark(p.value());
      }
    } else if (auto* attn = dynamic_cast<AttentionImpl*>(&m)) {
      // Gate and lag parameters have their own init (SPEC.md); c_attn and c_proj are Linear modules, handled above.
      attn->reset_parameters();
      for (auto& p : attn->named_parameters(/*recurse=*/false)) mark(p.value());
    }
  }
  // After every draw: the scaling multiplies the seeded values instead of replacing them.
  if (model.config().qk_scale_init) {
    for (const auto& block : *model.h) scale_qk_rows(block->as<BlockImpl>()->attn->c_attn->weight, model.config());
  }
  for (const auto& p : model.named_parameters()) {
    EGM_CHECK(done.count(p.value().unsafeGetTensorImpl()), "parameter {} has no initialisation rule (model/init.cpp)",
              p.key());
  }
}

}  // namespace egm
