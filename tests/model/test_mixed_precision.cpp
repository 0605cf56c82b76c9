// bf16 autocast as GPU users run it, checked on the CPU (LibTorch 2.x autocasts
// bf16 there too): the model's loss, logits and gradients against the fp32
// model within bf16's tolerance, and the parts SPEC.md's statistics need in
// fp32 (EGA's energies, z-scores and gate; MoPE's table) really fp32.
#include <gtest/gtest.h>

#include "config/run_config.h"
#include "model/attention_variants.h"
#include "model/gpt.h"
#include "model/position_encodings.h"
#include "util/torch_compat.h"
#include "model_configs.h"
#include "pass_compare.h"

namespace {

using egm::test::Pass;
using egm::test::tiny_model;

torch::Tensor batch(const egm::ModelConfig& c, int64_t B, uint64_t seed) {
  return torch::randint(c.vocab_size, {B, c.block_size}, egm::compat::make_cpu_generator(seed), torch::kLong);
}

Pass run(egm::GPT& model, const torch::Tensor& x, const torch::Tensor& y, bool bf16) {
  model->zero_grad();
  Pass p;
  {
    egm::compat::AutocastGuard autocast(bf16, at::kCPU, at::kBFloat16);
    p.logits = model->forward(x);
    p.loss = egm::GPTImpl::loss(p.logits, y);
  }
  p.loss.backward();
  for (const auto& param : model->parameters()) p.grads.push_back(param.grad().clone());
  return p;
}

class MixedPrecision : public ::testing::TestWithParam<std::string> {};

// Tolerances: egm::test::kBf16 (pass_compare.h).
TEST_P(MixedPrecision, Bf16AutocastMatchesFp32WithinTolerance) {
  if (!egm::compat::kTorch2) GTEST_SKIP() << "LibTorch " << egm::compat::torch_version() << " has no CPU bf16 autocast";
  const egm::ModelConfig c = tiny_model(GetParam());
  egm::GPT model = egm::build_model(c, egm::test::kCompareSeed);
  const torch::Tensor x = batch(c, 4, 1), y = batch(c, 4, 2);
  const Pass fp32 = run(model, x, y, /*bf16=*/false);
  const Pass bf16 = run(model, x, y, /*bf16=*/true);
  EXPECT_EQ(fp32.logits.scalar_type(), torch::kFloat32);
  EXPECT_EQ(bf16.logits.scalar_type(), torch::kBFloat16) << "autocast did not run the LM head in bf16";

  egm::test::expect_close(fp32, bf16, egm::test::kBf16, model);
}

INSTANTIATE_TEST_SUITE_P(MainVariants, MixedPrecision,
                         ::testing::Values("base", "ega", "ega_causal", "mope", "ega_mope"));

TEST(MixedPrecision, EgaStatisticsStayFp32UnderAutocast) {
  if (!egm::compat::kTorch2) GTEST_SKIP() << "no CPU bf16 autocast in this LibTorch";
  const egm::ModelConfig c = tiny_model("ega");
  egm::EnergyGatedAttentionImpl ega(c, /*layer=*/0);
  // A probe through the protected energies(): the gate is built from them.
  struct Probe : egm::EnergyGatedAttentionImpl {
    using egm::EnergyGatedAttentionImpl::EnergyGatedAttentionImpl;
    torch::Tensor e(const torch::Tensor& x) { return energies(x); }
  } probe(c, 0);
  const torch::Tensor x = torch::randn({2, c.block_size, c.d_model}, egm::compat::make_cpu_generator(3));
  torch::Tensor e32, e16, g16;
  {
    torch::NoGradGuard no_grad;
    e32 = probe.e(x);
    egm::compat::AutocastGuard autocast(true, at::kCPU, at::kBFloat16);
    e16 = probe.e(x);
    g16 = probe.key_gate(e16);
    // Control: the same Linear outside the guard does autocast, so the check above can fail.
    EXPECT_EQ(probe.energy(x).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(e16.scalar_type(), torch::kFloat32);
  EXPECT_EQ(g16.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(e16, e32)) << "energies under autocast differ from fp32";
}

TEST(MixedPrecision, MopeTableStaysFp32UnderAutocast) {
  if (!egm::compat::kTorch2) GTEST_SKIP() << "no CPU bf16 autocast in this LibTorch";
  const egm::ModelConfig c = tiny_model("mope");
  egm::MorletPositionImpl mope(c);
  torch::Tensor plain = mope.input_table(c.block_size, torch::kCPU), cast;
  {
    egm::compat::AutocastGuard autocast(true, at::kCPU, at::kBFloat16);
    cast = mope.input_table(c.block_size, torch::kCPU);
  }
  EXPECT_EQ(cast.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(cast, plain));
}

}  // namespace
