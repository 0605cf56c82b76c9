// The main variants at the paper's shapes (tests/gpu/README.md): one attention layer at
// H8 T256 head 32, the SDPA path (egm's CUDA default) against the plain-ops path at
// dropout 0, in bf16 on CUDA and, the same comparison, in fp32 on the CPU at small
// shapes and the paper's head width (so it runs wherever the tests run); the EGA layers
// mix SDPA's padded 40-wide value [g v | g | 0], causal EGA its 2T keys with a mask
// that needs a gradient. Then, on CUDA only, a 30-step paper-preset run per variant at
// dropout 0.1 (finite, falling losses) and the captured step against the eager one.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "model/attention.h"
#include "model/block.h"
#include "model/gpt.h"
#include "train/metrics_sink.h"
#include "train/trainer.h"
#include "util/torch_compat.h"
#include "word_corpus.h"

// Named: test_gpu's files compile as one unit (a unity build), beside test_gpu.cpp's helpers.
namespace paper_shapes {
namespace {

const std::vector<std::string> kMainVariants = {"base", "ega", "ega_causal", "mope", "ega_mope"};

struct LayerShape {
  int64_t B, T, H, head;
};

// One attention layer's output and the gradients of a fixed random projection of it:
// the input's and every parameter's of the layer (EGA's energy, tau and alpha included:
// through the mask, for causal EGA on the SDPA path), all as float64 on the CPU.
struct LayerPass {
  torch::Tensor y, dx;
  std::map<std::string, torch::Tensor> grads;
  std::optional<egm::SdpaResult> sdpa;  // the backend the SDPA path ran on
};

LayerPass layer_pass(const std::string& variant, const std::string& path, const LayerShape& s,
                     const torch::Device& device, bool bf16) {
  egm::ModelConfig c = egm::preset_config("paper").model;
  c.variant = variant;
  egm::apply_variant_options(c);
  c.n_layer = 1;
  c.n_head = s.H;
  c.d_model = s.H * s.head;
  c.block_size = s.T;
  c.vocab_size = 13;
  c.dropout = 0.0;
  c.attention_path = path;
  egm::GPT model = egm::build_model(c, 7);
  {
    // EGA's gates away from their init, the same draw for every path and device.
    torch::NoGradGuard no_grad;
    auto gen = egm::compat::make_cpu_generator(99);
    for (auto& p : model->named_parameters()) {
      if (p.key().find("energy.weight") != std::string::npos) p.value().copy_(0.5 * torch::randn(p.value().sizes(), gen));
      if (p.key().find("alpha") != std::string::npos) p.value().copy_(1.0 + 0.5 * torch::randn(p.value().sizes(), gen));
      if (p.key().find("tau") != std::string::npos) p.value().copy_(0.3 * torch::randn(p.value().sizes(), gen));
    }
  }
  model->to(device);
  model->train();
  auto attn = model->h[0]->as<egm::BlockImpl>()->attn;
  const egm::AttentionContext& ctx = model->pos->cached_attention_context(s.T, device);
  auto gen = egm::compat::make_cpu_generator(5);
  torch::Tensor x = torch::randn({s.B, s.T, c.d_model}, gen).to(device).requires_grad_();
  torch::Tensor w = torch::randn({s.B, s.T, c.d_model}, gen).to(device);
  LayerPass p;
  {
    egm::compat::AutocastGuard autocast(bf16, device.type(), at::kBFloat16);
    torch::Tensor y = attn->forward(x, ctx);
    (y.to(torch::kFloat32) * w).sum().backward();
    p.y = y.detach().to(torch::kCPU, torch::kFloat64);
  }
  p.dx = x.grad().to(torch::kCPU, torch::kFloat64);
  for (const auto& param : attn->named_parameters())
    p.grads[param.key()] = param.value().grad().to(torch::kCPU, torch::kFloat64);
  p.sdpa = attn->last_sdpa();
  return p;
}

// Gradients that are rounding noise: EGA's energy bias, which cancels in the z-score.
bool negligible(const torch::Tensor& g, const std::map<std::string, torch::Tensor>& all) {
  double largest = 0;
  for (const auto& [name, t] : all) largest = std::max(largest, t.norm().item<double>());
  return g.norm().item<double>() < 1e-6 * largest;
}

double cosine(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.flatten().dot(b.flatten()) / (a.norm() * b.norm()).clamp_min(1e-300)).item<double>();
}
double rel_max(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).abs().max().item<double>() / want.abs().max().clamp_min(1e-300).item<double>();
}

// The SDPA path really ran SDPA (and on which backend), and every gradient is there.
void expect_sdpa_ran(const LayerPass& p, const std::string& variant) {
  ASSERT_TRUE(p.sdpa.has_value()) << variant << ": the sdpa path did not call SDPA";
  ::testing::Test::RecordProperty(variant + "_sdpa_backend", egm::sdpa_backend_name(p.sdpa->backend));
  if (variant.rfind("ega", 0) == 0)
    for (const char* gated : {"energy.weight", "alpha", "tau"})
      EXPECT_GT(p.grads.at(gated).abs().max().item<double>(), 0.0) << variant << ": " << gated << " got no gradient";
}

class PaperShapes : public ::testing::TestWithParam<std::string> {};

// CPU, fp32: the SDPA path equals the plain-ops path (loss-free: the layer output and
// every gradient), at a small shape and at the paper's head width (value 33 -> 40).
TEST_P(PaperShapes, CpuFp32SdpaLayerMatchesThePlainOps) {
  const std::string variant = GetParam();
  for (const LayerShape s : {LayerShape{2, 16, 2, 8}, LayerShape{1, 64, 8, 32}}) {
    SCOPED_TRACE("B" + std::to_string(s.B) + " T" + std::to_string(s.T) + " H" + std::to_string(s.H) + " head" +
                 std::to_string(s.head));
    const LayerPass sdpa = layer_pass(variant, "sdpa", s, torch::kCPU, false);
    const LayerPass eager = layer_pass(variant, "eager", s, torch::kCPU, false);
    expect_sdpa_ran(sdpa, variant);
    EXPECT_LT(rel_max(sdpa.y, eager.y), 1e-5);
    EXPECT_LT(rel_max(sdpa.dx, eager.dx), 1e-4);
    for (const auto& [name, g] : eager.grads)
      if (!negligible(g, eager.grads)) EXPECT_LT(rel_max(sdpa.grads.at(name), g), 1e-4) << name;
  }
}

#ifndef EGM_REQUIRE_GPU
#define EGM_REQUIRE_GPU() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible"
#endif

// CUDA, bf16 autocast, H8 T256 head 32: both paths against the fp32 plain ops on the
// same GPU. bf16 bounds (the rounding of an 8-bit mantissa through a few products), and
// the SDPA path no worse than the plain ops in bf16 by more than a small margin.
TEST_P(PaperShapes, CudaBf16SdpaLayerMatchesThePlainOps) {
  EGM_REQUIRE_GPU();
  const std::string variant = GetParam();
  const LayerShape s{4, 256, 8, 32};
  const torch::Device cuda(torch::kCUDA, 0);
  const LayerPass ref = layer_pass(variant, "eager", s, cuda, false);
  const LayerPass sdpa = layer_pass(variant, "sdpa", s, cuda, true);
  const LayerPass eager = layer_pass(variant, "eager", s, cuda, true);
  expect_sdpa_ran(sdpa, variant);
  const double y_sdpa = rel_max(sdpa.y, ref.y), y_eager = rel_max(eager.y, ref.y);
  EXPECT_LT(y_sdpa, 3e-2) << "backend " << egm::sdpa_backend_name(sdpa.sdpa->backend);
  EXPECT_LT(y_sdpa, 3 * y_eager + 5e-3) << "plain ops in bf16: " << y_eager;
  EXPECT_GT(cosine(sdpa.dx, ref.dx), 0.995);
  for (const auto& [name, g] : ref.grads) {
    if (negligible(g, ref.grads)) continue;
    EXPECT_GT(cosine(sdpa.grads.at(name), g), 0.99) << name << " (plain ops in bf16: "
                                                    << cosine(eager.grads.at(name), g) << ")";
    EXPECT_NEAR(sdpa.grads.at(name).norm().item<double>(), g.norm().item<double>(), 0.05 * g.norm().item<double>())
        << name;
  }
}

// The training losses a run records, by step.
std::map<int64_t, double> losses(const egm::MemorySink& sink) {
  std::map<int64_t, double> out;
  for (const egm::ProgressRecord& r : sink.of<egm::ProgressRecord>()) out[r.step] = r.train_loss.value_or(NAN);
  return out;
}

egm::RunConfig paper_run(const std::string& variant, double dropout, int64_t steps, int64_t vocab) {
  egm::RunConfig c = egm::preset_config("paper");
  c.model.variant = variant;
  c.model.dropout = dropout;
  c.model.vocab_size = vocab;
  c.train.precision = "bf16";
  c.train.max_steps = steps;
  c.train.warmup_steps = 5;  // the paper's 300-step warm-up would barely move 30 steps
  c.train.lr = 1e-3;
  c.train.eval_interval = steps;
  c.train.eval_batches = 1;
  c.train.ar_eval_windows = 0;
  c.train.full_val_eval = false;
  return c;
}

egm::RuntimeOptions cuda_runtime() {
  egm::RuntimeOptions r;
  r.threads = 1;
  r.device = egm::parse_device_name("cuda");
  r.log_interval = 1;
  return r;
}

// 30 steps of the paper preset (B64 T256, bf16) at the paper's dropout 0.1: the fused
// SDPA backends with dropout at the paper's shapes, in a real step.
TEST_P(PaperShapes, CudaPaperPresetTrainsThirtyStepsWithDropout) {
  EGM_REQUIRE_GPU();
  static const egm::Corpus corpus = egm::test::word_corpus(12345);
  egm::MemorySink sink;
  EXPECT_EQ(egm::Trainer(paper_run(GetParam(), 0.1, 30, corpus.vocab_size()), cuda_runtime(), corpus, sink).run().status,
            egm::Outcome::done);
  const auto l = losses(sink);
  ASSERT_EQ(l.size(), 30u);
  double first = 0, last = 0;
  for (const auto& [step, loss] : l) {
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    if (step <= 5) first += loss / 5;
    if (step > 25) last += loss / 5;
  }
  EXPECT_LT(last, first - 0.1) << "the loss does not fall: first five " << first << ", last five " << last;
}

// The captured step (train.cuda_graphs) against the eager one at the paper preset,
// dropout 0: within 1e-3, since SDPA's and the fused optimizer's backward sums are not
// bitwise repeatable (atomics), which 12 steps can amplify a little.
TEST_P(PaperShapes, CudaGraphedStepsMatchTheEagerOnesAtThePaperPreset) {
  EGM_REQUIRE_GPU();
  static const egm::Corpus corpus = egm::test::word_corpus(12345);
  egm::RunConfig c = paper_run(GetParam(), 0.0, 12, corpus.vocab_size());
  egm::MemorySink eager, graphed;
  EXPECT_EQ(egm::Trainer(c, cuda_runtime(), corpus, eager).run().status, egm::Outcome::done);
  c.train.cuda_graphs = true;
  EXPECT_EQ(egm::Trainer(c, cuda_runtime(), corpus, graphed).run().status, egm::Outcome::done);
  const auto want = losses(eager), got = losses(graphed);
  ASSERT_EQ(want.size(), 12u);
  for (const auto& [step, loss] : want) {
    ASSERT_TRUE(got.count(step)) << "no loss at step " << step;
    EXPECT_NEAR(got.at(step), loss, 1e-3 * loss) << "step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(MainVariants, PaperShapes, ::testing::ValuesIn(kMainVariants));

}  // namespace
}  // namespace paper_shapes
