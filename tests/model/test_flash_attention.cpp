// Unit tests of the flash-style causal attention kernels (flash_attention_kernels.h):
// forward and every gradient against the older kernels that store [B, H, T, T]
// (causal_scores + softmax + causal_(gated_)dropout_matmul, themselves tested against
// plain LibTorch ops in test_causal_kernels.cpp) with the same dropout mask, and
// without dropout against plain LibTorch ops directly; then whole models (base,
// ega, ega_causal, alibi, rope, mope, ega_mope) with the flash path on and off; and the
// fused-projection entry (flash_causal_attention_qkv) against the split-heads one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "model/kernels/causal_attention_kernels.h"
#include "model/kernels/flash_attention_kernels.h"
#include "model/gpt.h"
#include "model_configs.h"
#include "pass_compare.h"

namespace {

constexpr double kFlashRtol = 1e-4, kFlashAtol = 1e-5;

// [B, H, T, D] with non-unit strides on every axis but the last, as AttentionImpl::project makes them.
torch::Tensor strided_heads(int64_t B, int64_t H, int64_t T, int64_t D) {
  return torch::randn({B, T, 3, H, D}).select(2, 1).permute({0, 2, 1, 3});
}

// Within the flash kernels' default tolerances unless given.
::testing::AssertionResult flash_close(const torch::Tensor& a, const torch::Tensor& b, double rtol = kFlashRtol,
                                       double atol = kFlashAtol) {
  return egm::test::tensors_close(a, b, rtol, atol);
}

struct FlashCase {
  int64_t T;
  int bias_heads;  // 0: none, 1: [1, T, T], 3 (= H): one per head, like ALiBi
  double p;        // attention dropout (training)
  bool gated;      // the causal EGA's pair gate
};

std::string flash_case_name(const ::testing::TestParamInfo<FlashCase>& info) {
  const FlashCase& c = info.param;
  return "T" + std::to_string(c.T) + "_bias" + std::to_string(c.bias_heads) + (c.p > 0 ? "_dropout" : "_nodropout") +
         (c.gated ? "_gated" : "_plain");
}

class FlashVsPanels : public ::testing::TestWithParam<FlashCase> {};

// The older path, to which the flash kernels must be equal.
torch::Tensor panels(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& a,
                     const torch::Tensor& c, const torch::Tensor& d, const torch::Tensor& bias, double scale, double p,
                     bool gated) {
  torch::Tensor P = torch::softmax(egm::causal_scores(q, k, scale, bias), -1);
  return gated ? egm::causal_gated_dropout_matmul(P, a, c, d, v, p, /*training=*/true)
               : egm::causal_dropout_matmul(P, v, p, /*training=*/true);
}

TEST_P(FlashVsPanels, ForwardAndEveryGradientMatchWithTheSameDropoutMask) {
  const FlashCase cs = GetParam();
  const int64_t B = 2, H = 3, T = cs.T, D = 16, E = cs.gated ? 17 : 12;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  torch::manual_seed(1000 + T);
  torch::Tensor q = strided_heads(B, H, T, D).mul_(2).requires_grad_();  // peaked rows: exp's range matters
  torch::Tensor k = strided_heads(B, H, T, D).requires_grad_();
  torch::Tensor v = torch::randn({B, T, H, E}).permute({0, 2, 1, 3}).requires_grad_();
  torch::Tensor a = torch::randn({B, H, T}).requires_grad_();
  torch::Tensor c = torch::randn({B, H, T});
  c[1][1].fill_(-1000.0);  // one (batch, head) with the gate shut everywhere
  c.requires_grad_();
  torch::Tensor d = (torch::randn({B, H, T}) * 2).requires_grad_();
  torch::Tensor bias = cs.bias_heads ? torch::randn({cs.bias_heads, T, T}) : torch::Tensor();
  std::vector<torch::Tensor> inputs = {q, k, v};
  if (cs.gated) inputs.insert(inputs.end(), {a, c, d});

  torch::manual_seed(7);  // the one dropout seed each path draws
  torch::Tensor y = cs.gated ? egm::flash_causal_gated_attention(q, k, a, c, d, v, scale, bias, cs.p, true)
                             : egm::flash_causal_attention(q, k, v, scale, bias, cs.p, true);
  torch::manual_seed(7);
  torch::Tensor y_ref = panels(q, k, v, a, c, d, bias, scale, cs.p, cs.gated);
  ASSERT_TRUE(flash_close(y, y_ref)) << "forward";

  torch::Tensor w = torch::randn(y.sizes());
  auto g = torch::autograd::grad({y}, inputs, {w});
  auto g_ref = torch::autograd::grad({y_ref}, inputs, {w});
  const char* names[] = {"dq", "dk", "dv", "da", "dc", "dd"};
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE(flash_close(g[i], g_ref[i], 1e-4, 1e-4)) << names[i];
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashVsPanels,
    ::testing::Values(FlashCase{1, 0, 0.0, false}, FlashCase{5, 0, 0.1, false}, FlashCase{64, 0, 0.0, false},
                      FlashCase{100, 3, 0.1, false}, FlashCase{130, 1, 0.0, false}, FlashCase{130, 0, 0.3, false},
                      FlashCase{1, 0, 0.1, true}, FlashCase{7, 3, 0.0, true}, FlashCase{64, 0, 0.1, true},
                      FlashCase{100, 0, 0.0, true}, FlashCase{130, 3, 0.2, true}),
    flash_case_name);

// flash_causal_attention_qkv (from the fused projection to the merged heads) against
// flash_causal_attention on the heads split and merged by hand, with the same dropout mask.
struct QkvCase {
  int64_t T, H, D;
  int bias_heads;  // 0: none, 1: [1, T, T], H: one per head
  double p;
};

std::string qkv_case_name(const ::testing::TestParamInfo<QkvCase>& info) {
  const QkvCase& c = info.param;
  return "T" + std::to_string(c.T) + "_H" + std::to_string(c.H) + "_D" + std::to_string(c.D) + "_bias" +
         std::to_string(c.bias_heads) + (c.p > 0 ? "_dropout" : "_nodropout");
}

class FlashQkv : public ::testing::TestWithParam<QkvCase> {};

TEST_P(FlashQkv, EqualsTheSplitHeadsPathForwardAndBackward) {
  const QkvCase cs = GetParam();
  const int64_t B = 2, T = cs.T, H = cs.H, D = cs.D;
  torch::manual_seed(500 + T);
  torch::Tensor qkv = (torch::randn({B, T, 3 * H * D}) * 1.5).requires_grad_();
  torch::Tensor bias = cs.bias_heads ? torch::randn({cs.bias_heads, T, T}) : torch::Tensor();
  const double scale = 0.4;

  torch::manual_seed(9);  // the one dropout seed each path draws
  torch::Tensor y = egm::flash_causal_attention_qkv(qkv, H, scale, bias, cs.p, /*training=*/true);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{B, T, H * D}));
  auto heads = qkv.view({B, T, 3, H, D}).permute({2, 0, 3, 1, 4}).unbind(0);
  torch::manual_seed(9);
  torch::Tensor y_ref = egm::flash_causal_attention(heads[0], heads[1], heads[2], scale, bias, cs.p, true)
                            .transpose(1, 2)
                            .reshape({B, T, H * D});
  ASSERT_TRUE(flash_close(y, y_ref)) << "forward";

  // An upstream gradient that is not contiguous (a transposed tensor), as well as a plain one.
  for (bool strided : {false, true}) {
    torch::Tensor w = strided ? torch::randn({H * D, T, B}).permute({2, 1, 0}) : torch::randn({B, T, H * D});
    torch::Tensor g = torch::autograd::grad({y}, {qkv}, {w}, /*retain_graph=*/true)[0];
    torch::Tensor g_ref = torch::autograd::grad({y_ref}, {qkv}, {w}, /*retain_graph=*/true)[0];
    EXPECT_TRUE(flash_close(g, g_ref, 1e-4, 1e-5)) << "dqkv, strided upstream gradient " << strided;
    EXPECT_GT(g.abs().sum().item<double>(), 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashQkv,
                         ::testing::Values(QkvCase{1, 2, 8, 0, 0.0}, QkvCase{5, 3, 4, 0, 0.1},
                                           QkvCase{64, 4, 16, 1, 0.0}, QkvCase{100, 2, 32, 2, 0.1},
                                           QkvCase{130, 3, 8, 0, 0.3}),
                         qkv_case_name);

TEST(FlashAttention, QkvRejectsBadShapesAndNonFloat32) {
  EXPECT_THROW(egm::flash_causal_attention_qkv(torch::randn({2, 5, 20}), 3, 1.0, torch::Tensor(), 0.0, false),
               c10::Error);  // 20 is not 3 * 3 * D
  EXPECT_THROW(egm::flash_causal_attention_qkv(torch::randn({5, 24}), 2, 1.0, torch::Tensor(), 0.0, false),
               c10::Error);
  EXPECT_THROW(egm::flash_causal_attention_qkv(torch::randn({2, 5, 24}, torch::kFloat64), 2, 1.0, torch::Tensor(),
                                               0.0, false),
               c10::Error);
  EXPECT_THROW(egm::flash_causal_attention_qkv(torch::randn({2, 5, 24}), 2, 1.0, torch::randn({3, 5, 5}), 0.0, false),
               c10::Error);  // bias heads neither 1 nor H
}

TEST(FlashAttention, WithoutDropoutEqualsSoftmaxOfMaskedScoresTimesV) {
  // Independent of the other kernels: plain LibTorch ops, in eval mode and with p = 0.
  const int64_t B = 2, H = 2, T = 77, D = 8, E = 8;
  torch::manual_seed(3);
  torch::Tensor q = strided_heads(B, H, T, D).requires_grad_(), k = strided_heads(B, H, T, D).requires_grad_();
  torch::Tensor v = torch::randn({B, H, T, E}).requires_grad_();
  torch::Tensor future = torch::ones({T, T}, torch::kBool).triu(1);
  torch::Tensor ref = torch::matmul(
      torch::softmax((torch::matmul(q, k.transpose(-2, -1)) * 0.3).masked_fill(future, -INFINITY), -1), v);
  for (auto [p, training] : {std::pair{0.0, true}, std::pair{0.5, false}}) {
    torch::Tensor y = egm::flash_causal_attention(q, k, v, 0.3, torch::Tensor(), p, training);
    ASSERT_TRUE(flash_close(y, ref)) << "p " << p << " training " << training;
    torch::Tensor w = torch::randn(y.sizes());
    auto g = torch::autograd::grad({y}, {q, k, v}, {w});
    auto g_ref = torch::autograd::grad({ref}, {q, k, v}, {w}, /*retain_graph=*/true);
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(flash_close(g[i], g_ref[i], 1e-4, 1e-4)) << "gradient " << i;
  }
}

TEST(FlashAttention, DropoutDrawsOneSeedPerCallAndDiffersBetweenCalls) {
  const int64_t B = 1, H = 2, T = 40, D = 8;
  torch::manual_seed(5);
  torch::Tensor q = torch::randn({B, H, T, D}), k = torch::randn({B, H, T, D});
  torch::Tensor v = torch::eye(T).expand({B, H, T, T}).contiguous();  // y = dropout(P)
  torch::Tensor y1 = egm::flash_causal_attention(q, k, v, 1.0, torch::Tensor(), 0.5, true);
  torch::Tensor y2 = egm::flash_causal_attention(q, k, v, 1.0, torch::Tensor(), 0.5, true);
  const double zeros1 = (y1.tril() == 0).to(torch::kFloat64).sum().item<double>() - B * H * T * (T - 1) / 2.0;
  const double pairs = B * H * T * (T + 1) / 2.0;
  EXPECT_NEAR(zeros1 / pairs, 0.5, 0.05) << "share of dropped pairs";
  EXPECT_FALSE(torch::equal(y1, y2)) << "a new mask per call";
  torch::Tensor kept = y1.masked_select(y1 != 0), probs = torch::softmax(
      torch::matmul(q, k.transpose(-2, -1)).masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -INFINITY), -1);
  EXPECT_TRUE(flash_close(kept, (probs * 2).masked_select(y1 != 0))) << "kept entries scaled by 1 / (1 - p)";
}

TEST(FlashAttention, RejectsBadShapesAndNonFloat32) {
  torch::Tensor q = torch::randn({1, 2, 5, 4});
  EXPECT_THROW(egm::flash_causal_attention(q, torch::randn({1, 2, 6, 4}), q, 1.0, torch::Tensor(), 0.0, false),
               c10::Error);
  EXPECT_THROW(egm::flash_causal_attention(q, q, torch::randn({1, 2, 4, 4}), 1.0, torch::Tensor(), 0.0, false),
               c10::Error);
  EXPECT_THROW(egm::flash_causal_attention(q, q, q, 1.0, torch::randn({2, 5, 4}), 0.0, false), c10::Error);
  EXPECT_THROW(egm::flash_causal_attention(q.to(torch::kFloat64), q.to(torch::kFloat64), q.to(torch::kFloat64), 1.0,
                                           torch::Tensor(), 0.0, false),
               c10::Error);
  torch::Tensor abc = torch::randn({1, 2, 4});
  EXPECT_THROW(egm::flash_causal_gated_attention(q, q, abc, abc, abc, q, 1.0, torch::Tensor(), 0.0, false), c10::Error);
}

// How many nodes of the autograd graph behind t have `part` in their name.
int count_nodes(const torch::Tensor& t, const std::string& part) {
  std::vector<torch::autograd::Node*> todo = {t.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  int n = 0;
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    if (node->name().find(part) != std::string::npos) ++n;
    for (const auto& e : node->next_edges()) todo.push_back(e.function.get());
  }
  return n;
}

// Whole models: the loss and every parameter's gradient with the flash path on and off,
// dropout on (the same seeds give the same masks on both paths).
class FlashInTheModel : public ::testing::TestWithParam<std::string> {};

TEST_P(FlashInTheModel, LossAndGradientsMatchThePanelPath) {
  // Context 70: two query blocks, the second partial.
  const egm::ModelConfig cfg = egm::test::sized_model(GetParam(), /*n_layer=*/2, /*n_head=*/4, /*d_model=*/32,
                                                      /*block_size=*/70, /*vocab_size=*/13, /*dropout=*/0.1);
  torch::manual_seed(11);
  egm::GPT model = egm::build_model(cfg, 2);
  model->train();
  {
    torch::NoGradGuard no_grad;  // open EGA's gates away from their init (ln_1 output has mean 0)
    for (auto& p : model->named_parameters())
      if (p.key().find("energy.weight") != std::string::npos) p.value().normal_(0, 0.5);
  }
  torch::Tensor idx = torch::randint(cfg.vocab_size, {3, cfg.block_size}, torch::kInt64);
  torch::Tensor targets = torch::randint(cfg.vocab_size, {3, cfg.block_size}, torch::kInt64);
  auto run = [&](bool flash) {
    egm::set_flash_attention(flash);
    torch::manual_seed(21);
    model->zero_grad();
    torch::Tensor loss = egm::GPTImpl::loss(model->forward(idx), targets);
    EXPECT_EQ(count_nodes(loss, "Flash"), flash ? cfg.n_layer : 0) << "one flash node per layer, or none";
    loss.backward();
    std::vector<torch::Tensor> grads;
    for (auto& p : model->parameters()) grads.push_back(p.grad().clone());
    return std::pair{loss.detach(), grads};
  };
  auto [loss_flash, g_flash] = run(true);
  auto [loss_panels, g_panels] = run(false);
  egm::set_flash_attention(true);
  EXPECT_TRUE(flash_close(loss_flash, loss_panels, 1e-5, 1e-6)) << loss_flash.item<double>() << " vs " << loss_panels.item<double>();
  auto names = model->named_parameters().keys();
  for (size_t i = 0; i < g_flash.size(); ++i) EXPECT_TRUE(flash_close(g_flash[i], g_panels[i], 1e-3, 1e-5)) << names[i];
}

INSTANTIATE_TEST_SUITE_P(Variants, FlashInTheModel,
                         ::testing::Values("base", "ega", "ega_causal", "alibi", "rope", "mope", "ega_mope"));

}  // namespace
