// The SDPA path's energy-gate autograd functions (model/energy_gate_functions.h)
// against the plain ops they replace: value and the gradient of every input, for a
// random upstream gradient, in float64 (tight) and float32, at several shapes,
// including a constant row (the variance clamp), T = 1 and denominators under the
// 1e-8 clamp. Then the clamp check of causal EGA's one-copy form against the gates
// themselves, and its bound against the weighted sums it stands for.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "model/energy_gate_functions.h"
#include "pass_compare.h"

namespace {

using egm::test::tensors_close;

// The published gate and value as plain ops (energy_gated_attention.cpp's key_gate, the cat and the pad).
torch::Tensor plain_gated_value(const torch::Tensor& e, const torch::Tensor& alpha, const torch::Tensor& tau,
                                const torch::Tensor& v, int64_t width) {
  torch::Tensor z = torch::zeros_like(e);
  if (e.size(-1) > 1) {
    torch::Tensor mean = e.mean(-1, true);
    torch::Tensor var = (e - mean).square().mean(-1, true);
    z = (e - mean) / var.clamp_min(1e-16).sqrt();
  }
  torch::Tensor g = torch::sigmoid(alpha.view({1, -1, 1}) * (z - tau.view({1, -1, 1}))).unsqueeze(-1);
  torch::Tensor out = torch::cat({v * g, g}, -1);
  return torch::constant_pad_nd(out, {0, width - out.size(-1)});
}

std::vector<torch::Tensor> grads_of(const torch::Tensor& out, const std::vector<torch::Tensor>& inputs,
                                    const torch::Tensor& upstream) {
  return torch::autograd::grad({out}, inputs, {upstream}, /*retain_graph=*/std::nullopt, /*create_graph=*/false,
                               /*allow_unused=*/true);
}

struct GateShape {
  int64_t B, H, T, E, width;
};

class PublishedGatedValueTest : public ::testing::TestWithParam<std::tuple<GateShape, bool>> {};

TEST_P(PublishedGatedValueTest, ValueAndEveryGradientMatchThePlainOps) {
  const auto [s, fp64] = GetParam();
  const auto dtype = fp64 ? torch::kFloat64 : torch::kFloat32;
  const double rtol = fp64 ? 1e-10 : 1e-4, atol = fp64 ? 1e-12 : 1e-5;
  torch::manual_seed(5);
  torch::Tensor e = torch::randn({s.B, s.H, s.T}, dtype) * 2 + 3;
  if (s.T > 2) {
    torch::NoGradGuard no_grad;
    e[0][0].fill_(1.5);  // a constant row: var = 0, the clamp holds, z = 0
  }
  e.requires_grad_(true);
  torch::Tensor alpha = (torch::randn({s.H}, dtype) + 2.0).requires_grad_(true);
  torch::Tensor tau = (torch::randn({s.H}, dtype) * 0.5).requires_grad_(true);
  torch::Tensor v = torch::randn({s.B, s.H, s.T, s.E}, dtype).requires_grad_(true);
  torch::Tensor upstream = torch::randn({s.B, s.H, s.T, s.width}, dtype);

  torch::Tensor got = egm::published_gated_value(e, alpha, tau, v, s.width);
  torch::Tensor want = plain_gated_value(e, alpha, tau, v, s.width);
  EXPECT_TRUE(tensors_close(got, want, rtol, atol));
  EXPECT_EQ(got.narrow(-1, s.E + 1, s.width - s.E - 1).abs().sum().item<double>(), 0.0) << "the pad is zero";
  auto g_got = grads_of(got, {e, alpha, tau, v}, upstream);
  auto g_want = grads_of(want, {e, alpha, tau, v}, upstream);
  const char* names[] = {"e", "alpha", "tau", "v"};
  for (size_t i = 0; i < g_got.size(); ++i) {
    if (s.T == 1 && i == 0) {  // z = 0 whatever e: no gradient reaches e
      EXPECT_FALSE(g_got[i].defined() && g_got[i].abs().sum().item<double>() != 0.0);
      continue;
    }
    EXPECT_TRUE(tensors_close(g_got[i], g_want[i], rtol, atol)) << names[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PublishedGatedValueTest,
                         ::testing::Combine(::testing::Values(GateShape{2, 3, 7, 5, 8}, GateShape{3, 4, 16, 32, 40},
                                                              GateShape{1, 2, 1, 4, 8}, GateShape{2, 2, 33, 7, 16}),
                                            ::testing::Bool()));

TEST(PadQueryKey, ZeroColumnsAndTheGradientsOfTheFirstOnes) {
  torch::manual_seed(2);
  torch::Tensor q = torch::randn({2, 3, 5, 6}, torch::kFloat64).requires_grad_(true);
  torch::Tensor k = torch::randn({2, 3, 5, 6}, torch::kFloat64).requires_grad_(true);
  auto [qp, kp] = egm::pad_query_key(q, k, 8);
  EXPECT_TRUE(torch::equal(qp, torch::constant_pad_nd(q, {0, 2})));
  EXPECT_TRUE(torch::equal(kp, torch::constant_pad_nd(k, {0, 2})));
  torch::Tensor uq = torch::randn({2, 3, 5, 8}, torch::kFloat64), uk = torch::randn({2, 3, 5, 8}, torch::kFloat64);
  auto g = torch::autograd::grad({qp, kp}, {q, k}, {uq, uk});
  EXPECT_TRUE(torch::equal(g[0], uq.narrow(-1, 0, 6)));
  EXPECT_TRUE(torch::equal(g[1], uk.narrow(-1, 0, 6)));
}

TEST(PadQueryKey, QAndKAsViewsOfOneProjectionTakeOneCopyAndTheSameValues) {
  // q and k as the model has them: two views of the fused projection [B, T, 3, H, E].
  torch::manual_seed(3);
  torch::Tensor qkv = torch::randn({2, 5, 3, 4, 6}, torch::kFloat64).requires_grad_(true);
  std::vector<torch::Tensor> parts = qkv.permute({2, 0, 3, 1, 4}).unbind(0);
  auto [qp, kp] = egm::pad_query_key(parts[0], parts[1], 8);
  EXPECT_TRUE(torch::equal(qp, torch::constant_pad_nd(parts[0], {0, 2})));
  EXPECT_TRUE(torch::equal(kp, torch::constant_pad_nd(parts[1], {0, 2})));
  torch::Tensor uq = torch::randn(qp.sizes(), torch::kFloat64), uk = torch::randn(kp.sizes(), torch::kFloat64);
  torch::Tensor got = torch::autograd::grad({qp, kp}, {qkv}, {uq, uk})[0];
  torch::Tensor want = torch::stack({uq.narrow(-1, 0, 6), uk.narrow(-1, 0, 6), torch::zeros_like(uq.narrow(-1, 0, 6))})
                           .permute({1, 3, 0, 2, 4});
  EXPECT_TRUE(torch::equal(got, want));
}

TEST(RenormaliseByColumn, ValueAndGradientMatchThePlainOpsAcrossTheClamp) {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const double rtol = dtype == torch::kFloat64 ? 1e-10 : 1e-5, atol = dtype == torch::kFloat64 ? 1e-12 : 1e-6;
    torch::manual_seed(8);
    const int64_t E = 5, width = 8;
    torch::Tensor y_den = torch::randn({2, 3, 6, width}, dtype);
    {
      // Denominators on both sides of the clamp: ordinary, tiny (1e-9 and 3e-12: clamped) and 0.
      auto den = y_den.narrow(-1, E, 1);
      den.copy_(den.abs() + 0.1);
      den[0][0][0] = 1e-9;
      den[0][1][2] = 3e-12;
      den[1][2][5] = 0.0;
      y_den.narrow(-1, E + 1, width - E - 1).zero_();  // the padding after den, as SDPA gives it
    }
    y_den.requires_grad_(true);
    torch::Tensor upstream = torch::randn({2, 3, 6, E}, dtype);
    torch::Tensor got = egm::renormalise_by_column(y_den, E);
    torch::Tensor want = y_den.narrow(-1, 0, E) / y_den.narrow(-1, E, 1).clamp_min(1e-8);
    EXPECT_TRUE(tensors_close(got, want, rtol, atol));
    EXPECT_TRUE(got.transpose(1, 2).is_contiguous()) << "laid out [B, T, H, E]: the heads merge without a copy";
    EXPECT_TRUE(tensors_close(grads_of(got, {y_den}, upstream)[0], grads_of(want, {y_den}, upstream)[0], rtol, atol));
  }
}

TEST(AffineLogGate, ValueAndEveryGradientMatchThePlainOps) {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const double rtol = dtype == torch::kFloat64 ? 1e-10 : 1e-4, atol = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
    for (const int64_t T : {1, 9, 40}) {
      torch::manual_seed(T);
      torch::Tensor a = (torch::randn({2, 3, T}, dtype) * 3).requires_grad_(true);
      torch::Tensor c = torch::randn({2, 3, T}, dtype).requires_grad_(true);
      torch::Tensor d = torch::randn({2, 3, T}, dtype).requires_grad_(true);
      torch::Tensor upstream = torch::randn({2, 3, T, T}, dtype);
      torch::Tensor got = egm::affine_log_gate(a, c, d);
      torch::Tensor want = torch::log_sigmoid(torch::addcmul(c.unsqueeze(-1), a.unsqueeze(-1), d.unsqueeze(-2)));
      EXPECT_TRUE(tensors_close(got, want, rtol, atol)) << "T " << T;
      auto g_got = grads_of(got, {a, c, d}, upstream), g_want = grads_of(want, {a, c, d}, upstream);
      for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(tensors_close(g_got[i], g_want[i], rtol, atol)) << "T " << T << " input " << i;
    }
  }
}

// Causal EGA's prefix terms as plain ops (causal_energy_gated_attention.cpp's prefix_gate_terms).
std::vector<torch::Tensor> plain_prefix_terms(const torch::Tensor& e, const torch::Tensor& alpha,
                                              const torch::Tensor& tau) {
  const int64_t T = e.size(-1);
  torch::Tensor e64 = e.to(torch::kFloat64);
  torch::Tensor d = e64 - e64.narrow(-1, 0, 1);
  torch::Tensor n = torch::arange(1, T + 1, e64.options());
  torch::Tensor mean = d.cumsum(-1) / n;
  torch::Tensor var = (d.square().cumsum(-1) / n - mean.square()).clamp_min(1e-16);
  torch::Tensor inv_std = var.rsqrt();
  torch::Tensor alpha64 = alpha.to(torch::kFloat64).view({1, -1, 1});
  torch::Tensor tau64 = tau.to(torch::kFloat64).view({1, -1, 1});
  return {(alpha64 * inv_std).to(e.scalar_type()), (-alpha64 * (mean * inv_std + tau64)).to(e.scalar_type()),
          d.to(e.scalar_type())};
}

TEST(PrefixGateTerms, ValueAndEveryGradientMatchThePlainOps) {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const double rtol = dtype == torch::kFloat64 ? 1e-9 : 1e-4, atol = dtype == torch::kFloat64 ? 1e-11 : 1e-5;
    for (const int64_t T : {1, 2, 13, 64}) {
      torch::manual_seed(40 + T);
      torch::Tensor e = torch::randn({2, 3, T}, dtype) * 2 + 5;
      if (T > 3) {
        torch::NoGradGuard no_grad;
        e[1][2].fill_(-0.5);            // a constant row: every prefix variance clamped
        e[0][1].narrow(0, 0, 3).fill_(2.0);  // a constant start: the first prefixes clamped, later ones not
      }
      e.requires_grad_(true);
      torch::Tensor alpha = (torch::randn({3}, dtype) + 2.0).requires_grad_(true);
      torch::Tensor tau = (torch::randn({3}, dtype) * 0.5).requires_grad_(true);
      egm::PrefixGateTerms got = egm::prefix_gate_terms(e, alpha, tau);
      std::vector<torch::Tensor> want = plain_prefix_terms(e, alpha, tau);
      const std::vector<torch::Tensor> outs = {got.a, got.c, got.d};
      std::vector<torch::Tensor> ups;
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(tensors_close(outs[i], want[i], rtol, atol)) << "T " << T << " output " << i;
        ups.push_back(torch::randn({2, 3, T}, dtype));
      }
      // Every output's gradient, and each alone (an output the graph does not use gets none).
      for (int only = -1; only < 3; ++only) {
        std::vector<torch::Tensor> o_got, o_want, u;
        for (int i = 0; i < 3; ++i)
          if (only < 0 || only == i) {
            o_got.push_back(outs[i]);
            o_want.push_back(want[i]);
            u.push_back(ups[i]);
          }
        auto g_got = torch::autograd::grad(o_got, {e, alpha, tau}, u, /*retain_graph=*/true, false, true);
        auto g_want = torch::autograd::grad(o_want, {e, alpha, tau}, u, /*retain_graph=*/true, false, true);
        for (size_t i = 0; i < 3; ++i) {
          torch::Tensor x = g_got[i].defined() ? g_got[i] : torch::zeros_like(i == 0 ? e : alpha);
          torch::Tensor y = g_want[i].defined() ? g_want[i] : torch::zeros_like(i == 0 ? e : alpha);
          EXPECT_TRUE(tensors_close(x, y, rtol, atol)) << "T " << T << " only " << only << " input " << i;
        }
      }
    }
  }
}

TEST(EnergyGateLayouts, GradientsOfTheEnergiesKeepTheirLayoutAndValues) {
  // The model's energies are a transposed view of [B, T, H]: the gradient is returned in that
  // layout (no copy before the projection's backward), with the plain ops' values.
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const double rtol = dtype == torch::kFloat64 ? 1e-9 : 1e-4, atol = dtype == torch::kFloat64 ? 1e-11 : 1e-5;
    torch::manual_seed(17);
    const int64_t B = 2, T = 11, H = 3, E = 4, width = 8;
    torch::Tensor eth = (torch::randn({B, T, H}, dtype) * 2 + 1).requires_grad_(true);
    torch::Tensor e = eth.transpose(1, 2);
    torch::Tensor alpha = (torch::randn({H}, dtype) + 2.0).requires_grad_(true);
    torch::Tensor tau = (torch::randn({H}, dtype) * 0.5).requires_grad_(true);
    torch::Tensor v = torch::randn({B, H, T, E}, dtype).requires_grad_(true);
    torch::Tensor up = torch::randn({B, H, T, width}, dtype);
    torch::Tensor out = egm::published_gated_value(e, alpha, tau, v, width);
    torch::Tensor de = torch::autograd::grad({out}, {e}, {up}, true)[0];
    EXPECT_EQ(de.strides(), e.strides());
    EXPECT_TRUE(tensors_close(de, grads_of(plain_gated_value(e, alpha, tau, v, width), {e}, up)[0], rtol, atol));

    egm::PrefixGateTerms t = egm::prefix_gate_terms(e, alpha, tau);
    std::vector<torch::Tensor> want = plain_prefix_terms(e, alpha, tau);
    std::vector<torch::Tensor> ups = {torch::randn({B, H, T}, dtype), torch::randn({B, H, T}, dtype),
                                      torch::randn({B, H, T}, dtype)};
    torch::Tensor pe = torch::autograd::grad({t.a, t.c, t.d}, {e}, ups, true)[0];
    EXPECT_EQ(pe.strides(), e.strides());
    EXPECT_TRUE(tensors_close(pe, torch::autograd::grad(want, {e}, ups, true)[0], rtol, atol));
  }
}

// The smallest gate of each query row over its prefix, formed pair by pair.
torch::Tensor smallest_prefix_gate(const torch::Tensor& a, const torch::Tensor& c, const torch::Tensor& d) {
  const int64_t T = a.size(-1);
  torch::Tensor x = torch::addcmul(c.unsqueeze(-1), a.unsqueeze(-1), d.unsqueeze(-2));
  torch::Tensor later = torch::ones({T, T}, torch::kBool).triu(1);
  return torch::sigmoid(x.masked_fill(later, INFINITY)).amin(-1);  // [B, H, T]
}

TEST(GateClampCheck, SaysWhetherSomeRowsSmallestGateFallsUnderTheClamp) {
  torch::manual_seed(21);
  int flagged = 0, clear = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const double spread = 0.5 + trial * 0.4;  // from gates far from 0 to gates that shut
    torch::Tensor a = torch::randn({2, 2, 24}, torch::kFloat64) * spread;
    torch::Tensor c = torch::randn({2, 2, 24}, torch::kFloat64) * spread;
    torch::Tensor d = torch::randn({2, 2, 24}, torch::kFloat64);
    const double smallest = smallest_prefix_gate(a, c, d).min().item<double>();
    const bool may_bind = egm::gate_clamp_may_bind(a, c, d);
    // sigmoid(-18) = 1.523e-8: flagged exactly when a row's smallest gate is under it.
    EXPECT_EQ(may_bind, smallest < 1.0 / (1.0 + std::exp(18.0))) << "trial " << trial << " smallest " << smallest;
    (may_bind ? flagged : clear)++;
    if (!may_bind) {
      // The bound itself: any softmax row over the prefix averages gates, so its gated sum
      // is at least the row's smallest gate, here for random and for one-key rows.
      torch::Tensor later = torch::ones({24, 24}, torch::kBool).triu(1);
      torch::Tensor gate = torch::sigmoid(torch::addcmul(c.unsqueeze(-1), a.unsqueeze(-1), d.unsqueeze(-2)));
      torch::Tensor P = torch::softmax((torch::randn({2, 2, 24, 24}, torch::kFloat64) * 20).masked_fill(later, -INFINITY), -1);
      EXPECT_GE((P * gate).sum(-1).min().item<double>(), 1e-8);
      EXPECT_GE(gate.masked_fill(later, INFINITY).amin(-1).min().item<double>(), 1e-8);
    }
  }
  EXPECT_GT(flagged, 5);
  EXPECT_GT(clear, 5);
}

TEST(GateClampCheck, NoHostReadsNestsAndRestores) {
  EXPECT_TRUE(egm::host_reads_allowed());
  {
    egm::NoHostReads outer;
    EXPECT_FALSE(egm::host_reads_allowed());
    {
      egm::NoHostReads inner;
      EXPECT_FALSE(egm::host_reads_allowed());
    }
    EXPECT_FALSE(egm::host_reads_allowed());
  }
  EXPECT_TRUE(egm::host_reads_allowed());
}

}  // namespace
