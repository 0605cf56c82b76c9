// model.attention_path: at::scaled_dot_product_attention (the CUDA default) holds
// the formula of today's path for standard attention (every position encoding),
// published EGA (values [g v | g] from one autograd function, q and k padded to
// their width, exact renormalisation) and causal EGA (the pair gate as a log-gate
// bias on one copy of the keys where the clamp cannot bind, two copies where it
// may, exact either way): the loss and every
// parameter's gradient equal the fused CPU kernels' and the plain-ops path's at
// dropout 0, in float32, at several shapes. The op counter (train/op_counter.h)
// proves each path really ran. Then the backend SDPA chose for the model's calls, and a
// backend's refusal survived (sdpa_backend.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "config/run_config.h"
#include "model/attention.h"
#include "model/energy_gate_functions.h"
#include "model/gpt.h"
#include "model/sdpa_backend.h"
#include "util/error.h"
#include "train/op_counter.h"
#include "model_configs.h"
#include "pass_compare.h"

namespace {

using egm::test::tensors_close;

struct Shape {
  int64_t B, T, n_head, d_model;
};

struct SdpaCase {
  std::string variant;
  Shape shape;
};

std::string sdpa_case_name(const ::testing::TestParamInfo<SdpaCase>& info) {
  std::string v = info.param.variant;
  for (char& ch : v)
    if (ch == '+') ch = '_';
  const Shape& s = info.param.shape;
  return v + "_B" + std::to_string(s.B) + "_T" + std::to_string(s.T) + "_H" + std::to_string(s.n_head) + "_d" +
         std::to_string(s.d_model);
}

struct Result {
  torch::Tensor loss;
  std::vector<torch::Tensor> grads;
  egm::OpCounts ops;
};

// Causal EGA's log-gate tensors formed: one per layer in its one-copy SDPA form, two (log g, log(1 - g)) in the two-copy one.
int64_t log_gates(const egm::OpCounts& ops) {
  auto it = ops.kernels_by_name.find("aten::log_sigmoid_forward");
  return it == ops.kernels_by_name.end() ? 0 : it->second;
}

class SdpaInTheModel : public ::testing::TestWithParam<SdpaCase> {};

TEST_P(SdpaInTheModel, LossAndEveryGradientMatchTheKernelsAndThePlainOps) {
  const SdpaCase cs = GetParam();
  egm::ModelConfig cfg = egm::test::sized_model(cs.variant, /*n_layer=*/2, cs.shape.n_head, cs.shape.d_model,
                                                cs.shape.T, /*vocab_size=*/13);
  egm::apply_variant_options(cfg);
  torch::manual_seed(11);
  torch::Tensor idx = torch::randint(cfg.vocab_size, {cs.shape.B, cfg.block_size}, torch::kInt64);
  torch::Tensor targets = torch::randint(cfg.vocab_size, {cs.shape.B, cfg.block_size}, torch::kInt64);
  auto run = [&](const std::string& path) {
    egm::ModelConfig c = cfg;
    c.attention_path = path;
    egm::GPT model = egm::build_model(c, 2);
    model->train();
    {
      torch::NoGradGuard no_grad;  // open EGA's gates away from their init (ln_1 output has mean 0)
      torch::manual_seed(99);      // the same draw for every path
      for (auto& p : model->named_parameters())
        if (p.key().find("energy.weight") != std::string::npos) p.value().normal_(0, 0.5);
    }
    Result r;
    egm::OpCounter counter;
    torch::Tensor loss = egm::GPTImpl::loss(model->forward(idx), targets);
    loss.backward();
    r.ops = counter.counts();
    r.loss = loss.detach();
    for (auto& p : model->parameters()) r.grads.push_back(p.grad().clone());
    return r;
  };
  Result sdpa = run("sdpa"), kernels = run("kernels"), eager = run("eager");
  auto sdpa_calls = [](const Result& r) {
    int64_t n = 0;
    for (const auto& [name, count] : r.ops.dispatched_by_name)
      if (name.find("scaled_dot_product") != std::string::npos) n += count;
    return n;
  };
  EXPECT_GE(sdpa_calls(sdpa), cfg.n_layer) << "the sdpa path calls SDPA's kernel in every layer";
  if (cs.variant.rfind("ega_causal", 0) == 0)
    EXPECT_EQ(log_gates(sdpa.ops), cfg.n_layer) << "causal EGA's one-copy form ran (the two-copy one has two log-gates)";
  EXPECT_EQ(sdpa_calls(kernels), 0);
  EXPECT_EQ(sdpa_calls(eager), 0);
  EXPECT_EQ(eager.ops.kernels_by_name.count("aten::softmax") + eager.ops.kernels_by_name.count("aten::_softmax"), 1u)
      << "the plain-ops path forms softmax(scores) itself";

  auto names = egm::build_model(cfg, 2)->named_parameters().keys();
  for (const auto* other : {&kernels, &eager}) {
    const char* which = other == &kernels ? "kernels" : "eager";
    EXPECT_TRUE(tensors_close(sdpa.loss, other->loss, 1e-5, 1e-6))
        << which << ": " << sdpa.loss.item<double>() << " vs " << other->loss.item<double>();
    ASSERT_EQ(sdpa.grads.size(), other->grads.size());
    for (size_t i = 0; i < sdpa.grads.size(); ++i)
      EXPECT_TRUE(tensors_close(sdpa.grads[i], other->grads[i], 1e-3, 2e-5)) << which << ": " << names[i];
  }
}

std::vector<SdpaCase> cases() {
  const std::vector<Shape> shapes = {{3, 70, 4, 32}, {2, 16, 2, 16}, {1, 9, 8, 64}};
  const std::vector<std::string> variants = {"base",     "ega",     "ega_causal", "alibi",      "rope",
                                             "rope_only", "mope",   "sincos",     "nope",       "ega_mope",
                                             "ega_causal_mope", "ega_alibi", "ega_causal_alibi", "ega_rope_only"};
  std::vector<SdpaCase> out;
  for (const auto& v : variants) out.push_back({v, shapes[0]});
  for (const auto& v : {"base", "ega", "ega_causal", "alibi", "rope"})
    for (size_t s = 1; s < shapes.size(); ++s) out.push_back({v, shapes[s]});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Variants, SdpaInTheModel, ::testing::ValuesIn(cases()), sdpa_case_name);

// A causal-EGA gate shut in one head (every g_ij ~ 0): the published renormalisation
// divides ~0 by max(~0, 1e-8) and gives ~0; a single log-gate copy of the keys would
// renormalise the tiny weights to a full average of v instead. The two-copy form agrees.
TEST(SdpaAttention, CausalEgaWithAShutGateMatchesThePublishedClamp) {
  const egm::ModelConfig cfg = egm::test::sized_model("ega_causal", /*n_layer=*/1, /*n_head=*/2, /*d_model=*/16,
                                                      /*block_size=*/12, /*vocab_size=*/7);
  torch::manual_seed(3);
  torch::Tensor idx = torch::randint(cfg.vocab_size, {2, cfg.block_size}, torch::kInt64);
  auto logits = [&](const std::string& path) {
    egm::ModelConfig c = cfg;
    c.attention_path = path;
    egm::GPT model = egm::build_model(c, 5);
    torch::NoGradGuard no_grad;
    torch::manual_seed(99);
    for (auto& p : model->named_parameters()) {
      if (p.key().find("energy.weight") != std::string::npos) p.value().normal_(0, 0.5);
      if (p.key().find("tau") != std::string::npos) p.value()[0] = 400.0;  // head 0: z never reaches tau
      if (p.key().find("alpha") != std::string::npos) p.value()[0] = 50.0;
    }
    model->eval();
    egm::OpCounter counter;
    torch::Tensor out = model->forward(idx);
    if (path == "sdpa") EXPECT_EQ(log_gates(counter.counts()), 2) << "the clamp may bind: the two-copy form";
    return out;
  };
  EXPECT_TRUE(tensors_close(logits("sdpa"), logits("eager"), 1e-4, 1e-5));
  EXPECT_TRUE(tensors_close(logits("sdpa"), logits("kernels"), 1e-4, 1e-5));
}

// Causal EGA's SDPA path takes one copy of the keys only where that is exact: at dropout 0
// (dropout would renormalise by the undropped weights) and where a host read is allowed
// (not while a CUDA graph is captured). Otherwise the two-copy form, with the same result.
TEST(SdpaAttention, CausalEgaTakesOneCopyOfTheKeysOnlyWhereThatIsExact) {
  egm::ModelConfig cfg = egm::test::sized_model("ega_causal", /*n_layer=*/2, /*n_head=*/2, /*d_model=*/32,
                                                /*block_size=*/20, /*vocab_size=*/11);  // dropout: per step below
  cfg.attention_path = "sdpa";
  torch::manual_seed(6);
  torch::Tensor idx = torch::randint(cfg.vocab_size, {3, cfg.block_size}, torch::kInt64);
  torch::Tensor targets = torch::randint(cfg.vocab_size, {3, cfg.block_size}, torch::kInt64);
  struct Step {
    int64_t log_gates;
    torch::Tensor loss;
    std::vector<torch::Tensor> grads;
  };
  auto step = [&](double dropout, bool host_reads) {
    egm::ModelConfig c = cfg;
    c.dropout = dropout;
    egm::GPT model = egm::build_model(c, 4);
    model->train();
    std::optional<egm::NoHostReads> no_reads;
    if (!host_reads) no_reads.emplace();
    egm::OpCounter counter;
    torch::Tensor loss = egm::GPTImpl::loss(model->forward(idx), targets);
    loss.backward();
    Step s{log_gates(counter.counts()), loss.detach(), {}};
    for (auto& p : model->parameters()) s.grads.push_back(p.grad().clone());
    return s;
  };
  const Step one = step(0.0, true), two = step(0.0, false);
  EXPECT_EQ(one.log_gates, cfg.n_layer);
  EXPECT_EQ(two.log_gates, 2 * cfg.n_layer);
  EXPECT_EQ(step(0.1, true).log_gates, 2 * cfg.n_layer) << "dropout: the two-copy form";
  EXPECT_TRUE(tensors_close(one.loss, two.loss, 1e-6, 1e-7));
  for (size_t i = 0; i < one.grads.size(); ++i) EXPECT_TRUE(tensors_close(one.grads[i], two.grads[i], 1e-4, 1e-6)) << i;
}

// The backend SDPA runs the model's own calls on (sdpa_backend.h), as LibTorch 2.11
// chooses on the CPU: its flash kernel for the bare causal call (standard attention, and
// EGA's [g v | g] value with q and k padded to its width), the math backend for an
// additive mask (causal EGA's log gate, which needs a gradient; ALiBi) and for any call
// with dropout.
egm::GPT sdpa_model(const std::string& variant, double dropout) {
  // d_model 64, head 32: EGA's value [g v | g] is 33 wide, padded to 40.
  egm::ModelConfig cfg = egm::test::sized_model(variant, /*n_layer=*/2, /*n_head=*/2, /*d_model=*/64,
                                                /*block_size=*/16, /*vocab_size=*/13, dropout);
  egm::apply_variant_options(cfg);
  cfg.attention_path = "sdpa";
  egm::GPT model = egm::build_model(cfg, 2);
  model->train();
  return model;
}

torch::Tensor train_loss(egm::GPT& model) {
  torch::manual_seed(11);
  torch::Tensor idx = torch::randint(13, {2, 16}, torch::kInt64);
  torch::Tensor loss = egm::GPTImpl::loss(model->forward(idx), torch::randint(13, {2, 16}, torch::kInt64));
  loss.backward();
  return loss.detach();
}

TEST(SdpaBackend, TheModelsCallsRecordTheBackendTheyRanOn) {
  egm::forget_sdpa_resolutions();
  const std::vector<std::tuple<std::string, double, std::string>> want = {
      {"base", 0.0, "flash"},     {"mope", 0.0, "flash"},      {"base", 0.1, "math"},  {"ega", 0.0, "flash"},
      {"ega_mope", 0.0, "flash"}, {"ega", 0.1, "math"},        {"ega_causal", 0.0, "math"}, {"alibi", 0.0, "math"}};
  for (const auto& [variant, dropout, backend] : want) {
    egm::GPT model = sdpa_model(variant, dropout);
    EXPECT_TRUE(model->sdpa_use().backends.empty()) << "nothing ran yet";
    train_loss(model);
    const egm::GPTImpl::SdpaUse use = model->sdpa_use();
    EXPECT_EQ(use.backends, std::vector<std::string>{backend}) << variant << " dropout " << dropout;
    EXPECT_TRUE(use.refused.empty()) << variant;
  }
  // sdpa_choice is LibTorch's own answer: a mask that needs a gradient, or dropout, is math's.
  torch::Tensor q = torch::randn({1, 2, 8, 32}, torch::requires_grad()), v = torch::randn({1, 2, 8, 40});
  EXPECT_EQ(egm::sdpa_choice({q, q, q, std::nullopt, 0.0, true, 0.2}), egm::SdpaBackend::flash);
  EXPECT_EQ(egm::sdpa_choice({q, q, q, std::nullopt, 0.1, true, 0.2}), egm::SdpaBackend::math);
  EXPECT_EQ(egm::sdpa_choice({q, q, v, torch::zeros({8, 8}), 0.0, false, 0.2}), egm::SdpaBackend::math);
}

// A backend that refuses a call at run time (EGM_SDPA_REFUSE stands in for a cuDNN plan
// that fails to build): the step runs on the next backend LibTorch would take, with one
// warning line for the whole run, and computes the same loss and gradients.
class SdpaRefusal : public ::testing::Test {
 protected:
  void SetUp() override { egm::forget_sdpa_resolutions(); }
  void TearDown() override {
    unsetenv("EGM_SDPA_REFUSE");
    egm::forget_sdpa_resolutions();
  }
};

TEST_F(SdpaRefusal, ARefusedBackendFallsBackToTheNextWithOneWarningLine) {
  egm::GPT model = sdpa_model("base", 0.0);
  const torch::Tensor want_loss = train_loss(model);
  ASSERT_EQ(model->sdpa_use().backends, std::vector<std::string>{"flash"});
  std::vector<torch::Tensor> want;
  for (auto& p : model->parameters()) want.push_back(p.grad().clone());

  egm::forget_sdpa_resolutions();
  setenv("EGM_SDPA_REFUSE", "flash", 1);
  egm::GPT again = sdpa_model("base", 0.0);
  ::testing::internal::CaptureStderr();
  const torch::Tensor got_loss = train_loss(again);  // the probe of the first call meets the refusal
  for (auto& p : again->parameters()) p.mutable_grad() = torch::Tensor();
  train_loss(again);  // a second step: the kind is resolved, no second warning
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("SDPA's flash backend refused q 2x2x16x32"), std::string::npos) << err;
  EXPECT_NE(err.find("running it on the math backend instead"), std::string::npos) << err;
  const egm::GPTImpl::SdpaUse use = again->sdpa_use();
  EXPECT_EQ(use.backends, std::vector<std::string>{"math"});
  EXPECT_EQ(use.refused, std::vector<std::string>{"flash"});
  EXPECT_TRUE(tensors_close(got_loss, want_loss, 1e-6, 1e-7));
  size_t i = 0;
  for (auto& p : again->parameters()) EXPECT_TRUE(tensors_close(p.grad(), want[i++], 1e-5, 1e-7));
}

TEST_F(SdpaRefusal, ACallWithoutGradientsFallsBackInTheCallItself) {
  egm::GPT model = sdpa_model("base", 0.0);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  torch::Tensor idx = torch::randint(13, {2, 16}, torch::kInt64);
  const torch::Tensor want = model->forward(idx);
  egm::forget_sdpa_resolutions();
  setenv("EGM_SDPA_REFUSE", "flash", 1);
  ::testing::internal::CaptureStderr();
  const torch::Tensor got = model->forward(idx);
  model->forward(idx);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("running it on the math backend instead"), std::string::npos) << err;
  EXPECT_TRUE(tensors_close(got, want, 1e-5, 1e-6));
}

TEST_F(SdpaRefusal, NoBackendLeftIsAnErrorThatSaysSo) {
  setenv("EGM_SDPA_REFUSE", "flash,math", 1);
  egm::GPT model = sdpa_model("base", 0.0);
  ::testing::internal::CaptureStderr();
  try {
    train_loss(model);
    ADD_FAILURE() << "no error";
  } catch (const egm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("SDPA's math backend failed on q 2x2x16x32"), std::string::npos) << e.what();
  }
  ::testing::internal::GetCapturedStderr();
}

TEST(SdpaAttention, PadsValuesToAMultipleOf8) {
  EXPECT_EQ(egm::pad_to_multiple_of_8(torch::ones({1, 1, 3, 33})).size(-1), 40);
  EXPECT_EQ(egm::pad_to_multiple_of_8(torch::ones({1, 1, 3, 16})).size(-1), 16);
  torch::Tensor p = egm::pad_to_multiple_of_8(torch::ones({2, 9}));
  EXPECT_EQ(p.narrow(-1, 9, 7).abs().sum().item<double>(), 0.0);
}

}  // namespace
