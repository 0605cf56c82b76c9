// Unit tests of the CPU attention kernels (causal_attention_kernels.h), the
// counter-based dropout (counter_dropout.h), the direct sgemm (cpu_blas.h) and
// the gated mixes of AttentionImpl that run on them.
//
// Every expected value comes from plain LibTorch ops written from the
// definitions: S = scale q k^T + bias with -inf above the diagonal
// (masked_fill), y = (P with its upper triangle zeroed) v (matmul), and the
// renormalised gated mix of SPEC.md section 2:
//   Ahat_ij = A_ij g_j / max(sum_k A_ik g_k, 1e-8),  out_i = sum_j Ahat_ij v_j.
// With dropout the mask is not drawn by bernoulli_, so it is recovered from
// the kernel itself (v = identity gives y = dropout(P)) and every other
// output is then checked against that one mask.
#include <gtest/gtest.h>

#include <cmath>

#include "config/run_config.h"
#include "model/attention.h"
#include "model/kernels/causal_attention_kernels.h"
#include "model/kernels/counter_dropout.h"
#include "model/kernels/cpu_blas.h"

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

// Strictly-above-the-diagonal positions of a T x T matrix (the future keys).
torch::Tensor future(int64_t T) { return torch::ones({T, T}, torch::kBool).triu(1); }

// [B, H, T, D] with non-unit strides on every axis but the last: a slice of
// a [B, T, 3, H, D] tensor permuted, as AttentionImpl::project makes them.
torch::Tensor strided_heads(int64_t B, int64_t H, int64_t T, int64_t D, int which) {
  return torch::randn({B, T, 3, H, D}).select(2, which).permute({0, 2, 1, 3});
}

torch::Tensor reference_scores(const torch::Tensor& q, const torch::Tensor& k, double scale,
                               const torch::Tensor& bias) {
  torch::Tensor s = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (bias.defined()) s = s + bias;
  return s.masked_fill(future(q.size(2)), -std::numeric_limits<float>::infinity());
}

bool same_values(const torch::Tensor& a, const torch::Tensor& b, double rtol = kRtol, double atol = kAtol) {
  return a.sizes() == b.sizes() && torch::allclose(a, b, rtol, atol);
}

// ---- causal_scores ------------------------------------------------------------------------------

struct ScoresCase {
  int64_t T;
  int bias_heads;  // 0: no bias, 1: one [1, T, T] bias, H: one per head (ALiBi)
};

class CausalScoresTest : public ::testing::TestWithParam<ScoresCase> {};

TEST_P(CausalScoresTest, ForwardAndBackwardMatchMatmulAndMaskedFill) {
  const auto [T, bias_heads] = GetParam();
  const int64_t B = 2, H = 3, D = 16;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  torch::manual_seed(T * 10 + bias_heads);
  torch::Tensor q = strided_heads(B, H, T, D, 0).requires_grad_(), k = strided_heads(B, H, T, D, 1).requires_grad_();
  ASSERT_FALSE(q.is_contiguous());
  torch::Tensor bias = bias_heads ? torch::randn({bias_heads, T, T}) : torch::Tensor();

  torch::Tensor s = egm::causal_scores(q, k, scale, bias);
  torch::Tensor s_ref = reference_scores(q, k, scale, bias);
  const torch::Tensor masked = future(T).expand({B, H, T, T});
  EXPECT_TRUE(torch::isinf(s).eq(masked).all().item<bool>()) << "-inf exactly above the diagonal";
  EXPECT_TRUE((s.masked_select(masked) < 0).all().item<bool>());
  EXPECT_TRUE(same_values(s.masked_fill(masked, 0), s_ref.masked_fill(masked, 0)));

  // An upstream gradient with garbage above the diagonal: those entries are -inf constants,
  // so the reference (masked_fill) gives them no gradient and the kernel must ignore them.
  torch::Tensor ds = torch::randn({B, H, T, T});
  auto g = torch::autograd::grad({s}, {q, k}, {ds});
  auto g_ref = torch::autograd::grad({s_ref}, {q, k}, {ds});
  EXPECT_TRUE(same_values(g[0], g_ref[0])) << "dq";
  EXPECT_TRUE(same_values(g[1], g_ref[1])) << "dk";
}

// T = 1, 70 and 130: not multiples of the kernels' 64-row block (and of no smaller power of
// two above 2), so partial blocks and the diagonal block boundary are both exercised.
INSTANTIATE_TEST_SUITE_P(BlockEdges, CausalScoresTest,
                         ::testing::Values(ScoresCase{1, 0}, ScoresCase{70, 0}, ScoresCase{70, 3},
                                           ScoresCase{130, 1}, ScoresCase{130, 3}));

TEST(CausalScores, RejectsMismatchedShapesAndBias) {
  torch::Tensor q = torch::randn({1, 2, 5, 4});
  EXPECT_THROW(egm::causal_scores(q, torch::randn({1, 2, 6, 4}), 1.0, {}), c10::Error);
  EXPECT_THROW(egm::causal_scores(q, q, 1.0, torch::randn({3, 5, 5})), c10::Error);
}

// ---- causal_dropout_matmul without dropout ------------------------------------------------------

class CausalMixTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(CausalMixTest, NoDropoutMatchesMatmulOfTheLowerTriangle) {
  const int64_t T = GetParam(), B = 2, H = 3, E = 17;  // E + 1 columns, as the gated mixes use
  torch::manual_seed(T);
  // P holds garbage above the diagonal: the kernel must read it as 0.
  torch::Tensor P = torch::rand({B, H, T, T}).requires_grad_();
  torch::Tensor v = torch::randn({B, T, H, E}).permute({0, 2, 1, 3}).requires_grad_();  // non-contiguous
  torch::Tensor dy = torch::randn({B, H, T, E});
  torch::Tensor ref = torch::matmul(P.masked_fill(future(T), 0), v);
  auto g_ref = torch::autograd::grad({ref}, {P, v}, {dy});
  // p = 0 in training, and p > 0 in eval: both are no dropout.
  for (auto [p, training] : {std::pair{0.0, true}, std::pair{0.3, false}}) {
    torch::Tensor y = egm::causal_dropout_matmul(P, v, p, training);
    EXPECT_TRUE(same_values(y, ref)) << "p " << p << " training " << training;
    auto g = torch::autograd::grad({y}, {P, v}, {dy});
    EXPECT_TRUE(same_values(g[0], g_ref[0])) << "dP, p " << p;
    EXPECT_TRUE(g[0].masked_select(future(T).expand({B, H, T, T})).eq(0).all().item<bool>());
    EXPECT_TRUE(same_values(g[1], g_ref[1])) << "dv, p " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(BlockEdges, CausalMixTest, ::testing::Values(1, 70, 130));

// ---- causal_dropout_matmul with dropout ---------------------------------------------------------

// dropout(P) as the kernel applies it, read back with v = identity (seeds the default generator).
torch::Tensor dropped(const torch::Tensor& P, double p, uint64_t seed) {
  const int64_t T = P.size(-1);
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  return egm::causal_dropout_matmul(P, torch::eye(T).expand(P.sizes()).contiguous(), p, true);
}

// Entries of P strictly inside (0.1, 1) so "kept" is exactly "nonzero after dropout".
torch::Tensor positive_probs(int64_t B, int64_t H, int64_t T) { return torch::rand({B, H, T, T}) * 0.9 + 0.1; }

TEST(CausalDropoutMatmul, RecoveredMaskIsScaledKeepWithTheRightRate) {
  const int64_t B = 2, H = 3, T = 130;
  const double p = 0.25;
  torch::manual_seed(5);
  torch::Tensor P = positive_probs(B, H, T);
  torch::Tensor A = dropped(P, p, 42);
  const torch::Tensor upper = future(T).expand({B, H, T, T}), lower = upper.logical_not();
  EXPECT_TRUE(A.masked_select(upper).eq(0).all().item<bool>()) << "nothing above the diagonal";
  torch::Tensor kept = A.ne(0).logical_and(lower);
  // Kept entries are P / (1 - p); the others are exactly 0.
  EXPECT_TRUE(torch::allclose(A.masked_select(kept), P.masked_select(kept) / (1 - p), 1e-6, 0));

  // Kept count ~ Binomial(N, 1 - p), N = B H T (T + 1) / 2 = 51090 entries on/below the diagonal:
  // sd = sqrt(N p (1 - p)) = 97.9; 5 sd bounds a false failure at ~6e-7.
  const double N = B * H * T * (T + 1) / 2.0;
  ASSERT_EQ(lower.sum().item<int64_t>(), static_cast<int64_t>(N));
  const double n_kept = kept.sum().item<double>();
  EXPECT_LT(std::abs(n_kept - N * (1 - p)), 5 * std::sqrt(N * p * (1 - p))) << n_kept << " of " << N;

  // Neighbours share one 64-bit draw (32 bits each): both kept must still have rate (1 - p)^2.
  // Pairs (j, j + 1), j even, both on/below the diagonal: M pairs ~ Binomial(M, (1 - p)^2).
  torch::Tensor a = kept.narrow(-1, 0, T - 1).slice(-1, 0, T - 1, 2);
  torch::Tensor b = kept.narrow(-1, 1, T - 1).slice(-1, 0, T - 1, 2);
  torch::Tensor pair_lower = lower.narrow(-1, 1, T - 1).slice(-1, 0, T - 1, 2);
  const double M = pair_lower.sum().item<double>(), q2 = (1 - p) * (1 - p);
  const double both = a.logical_and(b).logical_and(pair_lower).sum().item<double>();
  EXPECT_LT(std::abs(both - M * q2), 5 * std::sqrt(M * q2 * (1 - q2))) << both << " of " << M;
}

TEST(CausalDropoutMatmul, MasksAreReproducibleFromTheSeedAndDifferBetweenCalls) {
  torch::manual_seed(6);
  torch::Tensor P = positive_probs(2, 2, 70);
  torch::Tensor a = dropped(P, 0.1, 9), b = dropped(P, 0.1, 9), c = dropped(P, 0.1, 10);
  EXPECT_TRUE(torch::equal(a, b)) << "same generator seed, same mask";
  EXPECT_FALSE(torch::equal(a.ne(0), c.ne(0))) << "another seed, another mask";
  // Two calls in a row without reseeding draw two seeds from the generator.
  torch::manual_seed(9);
  torch::Tensor eye = torch::eye(70).expand(P.sizes()).contiguous();
  torch::Tensor first = egm::causal_dropout_matmul(P, eye, 0.1, true);
  torch::Tensor second = egm::causal_dropout_matmul(P, eye, 0.1, true);
  EXPECT_TRUE(torch::equal(first, a));
  EXPECT_FALSE(torch::equal(first.ne(0), second.ne(0)));
}

TEST(CausalDropoutMatmul, ForwardAndBackwardUseOneMask) {
  const int64_t B = 2, H = 2, T = 70, E = 9;
  const double p = 0.3;
  torch::manual_seed(7);
  torch::Tensor P = positive_probs(B, H, T);
  torch::Tensor A = dropped(P, p, 123);  // dropout(P), lower triangle
  torch::Tensor factor = A / P;           // 0 or 1 / (1 - p) per entry, 0 above the diagonal

  torch::Tensor Pg = P.clone().requires_grad_();
  torch::Tensor v = torch::randn({B, T, H, E}).permute({0, 2, 1, 3}).requires_grad_();
  torch::Tensor dy = torch::randn({B, H, T, E});
  torch::manual_seed(123);  // the same seed: the kernel draws the same mask again
  torch::Tensor y = egm::causal_dropout_matmul(Pg, v, p, true);
  EXPECT_TRUE(same_values(y, torch::matmul(A, v)));
  auto g = torch::autograd::grad({y}, {Pg, v}, {dy});
  // y = (P * factor) v  =>  dP = (dy v^T) * factor,  dv = (P * factor)^T dy.
  EXPECT_TRUE(same_values(g[0], torch::matmul(dy, v.transpose(-2, -1)) * factor)) << "dP";
  EXPECT_TRUE(same_values(g[1], torch::matmul(A.transpose(-2, -1), dy))) << "dv";
}

// ---- causal_gated_dropout_matmul -----------------------------------------------------------------

// The gate of causal EGA from its three [B, H, T] vectors, written out: sigmoid(a_i d_j + c_i).
torch::Tensor explicit_gate(const torch::Tensor& a, const torch::Tensor& c, const torch::Tensor& d) {
  return torch::sigmoid(a.unsqueeze(-1) * d.unsqueeze(-2) + c.unsqueeze(-1));
}

struct GatedMatmulCase {
  int64_t T;
  double p;  // 0: no dropout
};

class CausalGatedMatmulTest : public ::testing::TestWithParam<GatedMatmulCase> {};

TEST_P(CausalGatedMatmulTest, ForwardAndAllFiveGradientsMatchTheExplicitGate) {
  const auto [T, p] = GetParam();
  const int64_t B = 2, H = 3, E = 9;
  torch::manual_seed(T + static_cast<int64_t>(p * 100));
  torch::Tensor P = positive_probs(B, H, T).requires_grad_();
  // Logits a_i d_j + c_i spread over about [-6, 6]: the gate is open, shut and in between.
  torch::Tensor a = (torch::randn({B, H, T}) * 1.5).requires_grad_();
  torch::Tensor c = torch::randn({B, H, T}).requires_grad_();
  torch::Tensor d = (torch::randn({B, H, T}) * 2).requires_grad_();
  torch::Tensor v = torch::randn({B, T, H, E}).permute({0, 2, 1, 3}).requires_grad_();
  // dropout(P) = P * factor; the factors are recovered from the ungated kernel with the same seed.
  torch::Tensor factor = p > 0 ? dropped(P.detach(), p, 31) / P.detach() : torch::ones({B, H, T, T});
  if (p > 0) {
    ASSERT_TRUE(factor.eq(0).logical_and(future(T).logical_not()).any().item<bool>()) << "something dropped";
  }

  torch::manual_seed(31);
  torch::Tensor y = egm::causal_gated_dropout_matmul(P, a, c, d, v, p, p > 0);
  torch::Tensor M = (P * factor * explicit_gate(a, c, d)).masked_fill(future(T), 0);
  torch::Tensor y_ref = torch::matmul(M, v);
  ASSERT_TRUE(same_values(y, y_ref));

  torch::Tensor w = torch::randn(y.sizes());
  const std::vector<torch::Tensor> inputs{P, a, c, d, v};
  auto g = torch::autograd::grad({y}, inputs, {w});
  auto g_ref = torch::autograd::grad({y_ref}, inputs, {w});
  const char* names[] = {"dP", "da", "dc", "dd", "dv"};
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(same_values(g[i], g_ref[i], 1e-4, 1e-4)) << names[i] << ", max diff "
                                                          << (g[i] - g_ref[i]).abs().max().item<double>();
}

// T = 70 and 130 cross the 64-row blocks; 64 is exactly one block.
INSTANTIATE_TEST_SUITE_P(Shapes, CausalGatedMatmulTest,
                         ::testing::Values(GatedMatmulCase{64, 0.0}, GatedMatmulCase{70, 0.0},
                                           GatedMatmulCase{70, 0.2}, GatedMatmulCase{130, 0.1}));

TEST(CausalGatedMatmul, DrawsTheSameMaskAsTheUngatedKernel) {
  // With a gate that is 1 everywhere (a = 0, c large) the two kernels must agree exactly:
  // ega_causal and the ungated variants share one dropout stream.
  const int64_t B = 2, H = 2, T = 70, E = 5;
  torch::manual_seed(8);
  torch::Tensor P = positive_probs(B, H, T), v = torch::randn({B, H, T, E});
  torch::Tensor zero = torch::zeros({B, H, T}), big = torch::full({B, H, T}, 100.0);
  torch::manual_seed(12);
  torch::Tensor gated = egm::causal_gated_dropout_matmul(P, zero, big, zero, v, 0.3, true);
  torch::manual_seed(12);
  torch::Tensor plain = egm::causal_dropout_matmul(P, v, 0.3, true);
  EXPECT_TRUE(torch::equal(gated, plain));
}

// ---- the gated mixes of AttentionImpl (SPEC.md section 2) ------------------------------------

// Exposes the protected mixing steps; forward is not used.
struct MixProbe : egm::AttentionImpl {
  using AttentionImpl::AttentionImpl;
  using AttentionImpl::key_gated_mix;
  using AttentionImpl::pair_gated_mix;
  using AttentionImpl::affine_pair_gated_mix;
  torch::Tensor forward(const torch::Tensor& x, const egm::AttentionContext&) override { return x; }
};

egm::ModelConfig probe_config(double dropout) {
  egm::ModelConfig c;
  c.n_head = 2;
  c.d_model = 16;
  c.block_size = 70;
  c.dropout = dropout;
  return c;
}

// Causal softmax probabilities [B, H, T, T] (0 above the diagonal).
torch::Tensor causal_probs(int64_t B, int64_t H, int64_t T) {
  return torch::softmax(torch::randn({B, H, T, T}).masked_fill(future(T), -INFINITY), -1);
}

// SPEC.md: Ahat_ij = A_ij G_ij / max(sum_k A_ik G_ik, 1e-8), out = Ahat v. A is causal: its
// entries above the diagonal are zeros (masked_fill also gives them zero gradient, as the
// kernels do; in the model they follow a softmax over -inf, which passes no gradient there).
torch::Tensor gated_mix_formula(const torch::Tensor& A_in, const torch::Tensor& G, const torch::Tensor& v) {
  torch::Tensor AG = A_in.masked_fill(future(A_in.size(-1)), 0) * G;
  return torch::matmul(AG / AG.sum(-1, true).clamp_min(1e-8), v);
}

struct GatedInputs {
  torch::Tensor P, g, gate, v;
  torch::Tensor a, c, d;  // causal EGA's gate sigmoid(a_i d_j + c_i)
};

GatedInputs gated_inputs(int64_t B, int64_t H, int64_t T, int64_t E) {
  GatedInputs in;
  in.P = causal_probs(B, H, T).requires_grad_();
  in.g = torch::rand({B, H, T});
  in.g[0][0].zero_();  // one (batch, head) with every key gated off: the 1e-8 floor gives 0
  in.g.requires_grad_();
  in.gate = torch::rand({B, H, T, T}).requires_grad_();  // future entries hold values too, as ega_causal's do
  in.v = torch::randn({B, T, H, E}).permute({0, 2, 1, 3}).requires_grad_();
  in.a = torch::randn({B, H, T}).requires_grad_();
  in.c = torch::randn({B, H, T});
  in.c[1][1].fill_(-1000.0);  // another (batch, head) with the pair gate shut (exactly 0) everywhere
  in.c.requires_grad_();
  in.d = (torch::randn({B, H, T}) * 2).requires_grad_();
  return in;
}

void expect_same_with_grads(const torch::Tensor& out, const torch::Tensor& expected,
                            const std::vector<torch::Tensor>& inputs, const std::string& what) {
  ASSERT_TRUE(same_values(out, expected)) << what;
  torch::Tensor w = torch::randn(out.sizes());
  auto g = torch::autograd::grad({out}, inputs, {w});
  auto g_ref = torch::autograd::grad({expected}, inputs, {w});
  for (size_t i = 0; i < inputs.size(); ++i)
    EXPECT_TRUE(same_values(g[i], g_ref[i], 1e-4, 1e-4)) << what << ": gradient of input " << i;
}

TEST(GatedMix, KeyPairAndAffineGatesEqualTheRenormalisedFormulaInTrainWithoutDropoutAndInEval) {
  const int64_t B = 2, H = 2, T = 70, E = 8;
  for (bool training : {true, false}) {
    // Training with p = 0, and eval with the paper's p = 0.1 (eval: no dropout).
    MixProbe probe(probe_config(training ? 0.0 : 0.1), 0);
    probe.train(training);
    torch::manual_seed(training ? 1 : 2);
    GatedInputs in = gated_inputs(B, H, T, E);
    const std::string mode = training ? "train p=0" : "eval";

    torch::Tensor out = probe.key_gated_mix(in.P, in.g, in.v);
    expect_same_with_grads(out, gated_mix_formula(in.P, in.g.unsqueeze(2), in.v), {in.P, in.g, in.v},
                           "key gate, " + mode);
    EXPECT_TRUE(out[0][0].eq(0).all().item<bool>()) << "all keys gated off";

    torch::Tensor pair = probe.pair_gated_mix(in.P, in.gate, in.v);
    expect_same_with_grads(pair, gated_mix_formula(in.P, in.gate, in.v), {in.P, in.gate, in.v},
                           "pair gate, " + mode);

    torch::Tensor affine = probe.affine_pair_gated_mix(in.P, in.a, in.c, in.d, in.v);
    expect_same_with_grads(affine, gated_mix_formula(in.P, explicit_gate(in.a, in.c, in.d), in.v),
                           {in.P, in.a, in.c, in.d, in.v}, "affine pair gate, " + mode);
    EXPECT_TRUE(affine[1][1].eq(0).all().item<bool>()) << "pair gate shut everywhere";
  }
}

TEST(GatedMix, WithDropoutTheGateActsOnTheDroppedProbabilities) {
  // Dropout before the gate (SPEC.md): A = dropout(P), one mask for the whole call.
  const int64_t B = 2, H = 2, T = 70, E = 8;
  const double p = 0.2;
  MixProbe probe(probe_config(p), 0);
  probe.train();
  torch::manual_seed(3);
  GatedInputs in = gated_inputs(B, H, T, E);
  torch::Tensor A = dropped(in.P.detach(), p, 77);
  ASSERT_TRUE(A.eq(0).logical_and(future(T).logical_not()).any().item<bool>()) << "something was dropped";

  torch::manual_seed(77);
  torch::Tensor key = probe.key_gated_mix(in.P, in.g, in.v);
  EXPECT_TRUE(same_values(key, gated_mix_formula(A, in.g.unsqueeze(2), in.v))) << "key gate";
  torch::manual_seed(77);
  torch::Tensor pair = probe.pair_gated_mix(in.P, in.gate, in.v);
  EXPECT_TRUE(same_values(pair, gated_mix_formula(A, in.gate, in.v))) << "pair gate";
  torch::manual_seed(77);
  torch::Tensor affine = probe.affine_pair_gated_mix(in.P, in.a, in.c, in.d, in.v);
  EXPECT_TRUE(same_values(affine, gated_mix_formula(A, explicit_gate(in.a, in.c, in.d), in.v))) << "affine gate";
}

// ---- counter_dropout ----------------------------------------------------------------------------

TEST(CounterDropout, KeepsWithRate1MinusPAndScalesBy1OverThat) {
  const double p = 0.2;
  torch::manual_seed(1);
  torch::Tensor x = torch::rand({300, 333}) + 0.5;  // no zeros: kept <=> nonzero
  torch::Tensor y = egm::counter_dropout(x, p, true);
  torch::Tensor kept = y.ne(0);
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.masked_select(kept) / (1 - p), 1e-6, 0));
  // Binomial(N, 1 - p), N = 99900: sd = 126.4; 5 sd.
  const double N = x.numel(), n_kept = kept.sum().item<double>();
  EXPECT_LT(std::abs(n_kept - N * (1 - p)), 5 * std::sqrt(N * p * (1 - p)));
}

TEST(CounterDropout, BackwardUsesTheForwardMask) {
  torch::manual_seed(2);
  torch::Tensor x = (torch::rand({50000}) + 0.5).requires_grad_();
  torch::Tensor y = egm::counter_dropout(x, 0.4, true);
  torch::Tensor w = torch::randn({50000});
  torch::Tensor dx = torch::autograd::grad({y}, {x}, {w})[0];
  EXPECT_TRUE(torch::allclose(dx, w * (y / x).detach(), 1e-5, 1e-6));  // y / x: the factor, 0 or 1/(1-p)
}

TEST(CounterDropout, IdentityAtP0AndInEvalZerosAtP1) {
  torch::Tensor x = torch::randn({64, 65}).requires_grad_();
  EXPECT_TRUE(torch::equal(egm::counter_dropout(x, 0.0, true), x));
  EXPECT_TRUE(torch::equal(egm::counter_dropout(x, 0.5, false), x));
  torch::Tensor zero = egm::counter_dropout(x, 1.0, true);
  EXPECT_TRUE(zero.eq(0).all().item<bool>());
  EXPECT_TRUE(torch::autograd::grad({zero.sum()}, {x})[0].eq(0).all().item<bool>());

  torch::nn::Dropout module(torch::nn::DropoutOptions(0.5));
  module->eval();
  EXPECT_TRUE(torch::equal(egm::dropout(x, module), x));
  module->train();
  EXPECT_FALSE(torch::equal(egm::dropout(x, module), x));
}

TEST(CounterDropout, MaskIsAFunctionOfSeedAndIndexOnly) {
  // Applied in pieces starting at odd and even offsets, or with 1 or 2 threads: the same factors.
  egm::DropoutMask mask(0.5, 12345);
  const int64_t n = 1001;
  std::vector<float> ones(n, 1.0f), whole(n), pieces(n);
  mask.apply(0, n, ones.data(), whole.data());
  for (int64_t start : {0, 1, 2, 7, 500, 999}) {
    const int64_t len = std::min<int64_t>(n - start, 313);
    mask.apply(start, len, ones.data(), pieces.data() + start);
    for (int64_t i = start; i < start + len; ++i) ASSERT_EQ(pieces[i], whole[i]) << "element " << i;
  }
  EXPECT_EQ(egm::DropoutMask(0.5, 12345).seed(), 12345u);

  const int threads = torch::get_num_threads();
  torch::Tensor x = torch::ones({1 << 18});  // 8 chunks of the parallel grain
  torch::set_num_threads(1);
  torch::manual_seed(4);
  torch::Tensor one = egm::counter_dropout(x, 0.3, true);
  torch::set_num_threads(2);
  torch::manual_seed(4);
  torch::Tensor two = egm::counter_dropout(x, 0.3, true);
  torch::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, two));
}

TEST(CounterDropout, KeepsElementIWhenItsHalfOfSplitMix64CounterIOver2IsBelowTheThreshold) {
  // The documented stream (counter_dropout.h), written out here: SplitMix64 of seed + (i / 2) *
  // golden, low 32 bits for even i, high for odd; kept when below round((1 - p) 2^32).
  auto splitmix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const double p = 0.3;
  const uint64_t seed = 987654321, threshold = std::llround((1 - p) * 4294967296.0);
  egm::DropoutMask mask(p, seed);
  const int64_t n = 1500;  // crosses the kernel's 512-element chunks
  std::vector<float> x(n), out(n);
  for (int64_t j = 0; j < n; ++j) x[j] = 1.0f + static_cast<float>(j);
  // Offsets even and odd, and past 2^32 (counters beyond 32 bits).
  for (int64_t start : {int64_t{0}, int64_t{1}, int64_t{511}, int64_t{5000000001}, int64_t{5000000002}}) {
    mask.apply(start, n, x.data(), out.data());
    int64_t kept = 0;
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t i = static_cast<uint64_t>(start + j);
      const uint64_t r = splitmix(seed + (i >> 1) * 0x9e3779b97f4a7c15ULL);
      const uint32_t bits = static_cast<uint32_t>((i & 1) ? r >> 32 : r);
      const float expected = bits < threshold ? x[j] * static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
      ASSERT_EQ(out[j], expected) << "element " << i;
      kept += bits < threshold;
    }
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, n);
  }
  // A dropped NaN stays NaN, as x * 0 does in torch.dropout.
  std::vector<float> nan(n, std::nanf("")), nan_out(n);
  mask.apply(0, n, nan.data(), nan_out.data());
  for (int64_t j = 0; j < n; ++j) ASSERT_TRUE(std::isnan(nan_out[j])) << j;
}

TEST(CounterDropout, FactorsAreWhatApplyMultipliesBy) {
  // x * factors(start, n) == apply(start, n, x) bit for bit: offsets even and odd, across the
  // 512-element chunks, past 2^32; and the constant factor of an inactive mask (p = 0, default).
  const int64_t n = 1500;
  std::vector<float> x(n), f(n), out(n);
  for (int64_t j = 0; j < n; ++j) x[j] = 0.5f + static_cast<float>(j % 17) * 0.37f;
  for (const egm::DropoutMask& mask : {egm::DropoutMask(0.3, 2024), egm::DropoutMask(0.0, 7), egm::DropoutMask()}) {
    for (int64_t start : {int64_t{0}, int64_t{1}, int64_t{511}, int64_t{5000000001}}) {
      for (int64_t len : {int64_t{1}, int64_t{513}, n}) {
        mask.factors(start, len, f.data());
        mask.apply(start, len, x.data(), out.data());
        int64_t zeros = 0;
        for (int64_t j = 0; j < len; ++j) {
          ASSERT_EQ(x[j] * f[j], out[j]) << "p " << mask.p() << " element " << start + j;
          zeros += f[j] == 0.0f;
        }
        if (mask.active() && len == n) {
          EXPECT_NEAR(static_cast<double>(zeros) / n, 0.3, 0.05);
        }
        if (!mask.active()) {
          EXPECT_EQ(zeros, 0);
        }
      }
    }
  }
}

// ---- cpu_sgemm ----------------------------------------------------------------------------------

TEST(CpuSgemm, MatchesTorchForEveryTransposeWithPaddedRows) {
  torch::manual_seed(8);
  const int64_t m = 37, n = 29, k = 19, pad = 5;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // Stored with row strides larger than the logical width (as the kernels' slices are).
      torch::Tensor a_store = torch::randn({ta ? k : m, (ta ? m : k) + pad});
      torch::Tensor b_store = torch::randn({tb ? n : k, (tb ? k : n) + pad});
      torch::Tensor a = a_store.narrow(1, 0, ta ? m : k), b = b_store.narrow(1, 0, tb ? k : n);
      torch::Tensor c_store = torch::randn({m, n + pad}), c0 = c_store.narrow(1, 0, n).clone();
      egm::cpu_sgemm(ta, tb, m, n, k, 0.5f, a_store.data_ptr<float>(), a_store.size(1), b_store.data_ptr<float>(),
                     b_store.size(1), 2.0f, c_store.data_ptr<float>(), c_store.size(1));
      torch::Tensor expected = 0.5 * torch::matmul(ta ? a.t() : a, tb ? b.t() : b) + 2.0 * c0;
      EXPECT_TRUE(torch::allclose(c_store.narrow(1, 0, n), expected, 1e-4, 1e-4)) << ta << tb;
    }
}

}  // namespace
