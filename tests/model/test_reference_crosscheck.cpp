// The C++ model against the independent PyTorch reference (tests/reference):
// same weights in, same logits, loss and gradients out, for every attention x
// position variant; plus prefix-only logits for the causality audit.
#include <gtest/gtest.h>

#include <filesystem>

#include "egmt.h"
#include "model/causality.h"
#include "model/gpt.h"

namespace {

using egm::test::TensorMap;

std::string fixture_path(const std::string& variant) {
  return egm::test::reference_fixture_dir() + "/" + variant + ".egmt";
}

// Largest |a - b| beyond atol + rtol*|b|, reported with its index.
::testing::AssertionResult close(const std::string& what, const torch::Tensor& got, const torch::Tensor& want,
                                 double atol, double rtol) {
  if (got.sizes() != want.sizes())
    return ::testing::AssertionFailure() << what << ": shape " << got.sizes() << " vs " << want.sizes();
  torch::Tensor g = got.detach().to(torch::kFloat64), w = want.to(torch::kFloat64);
  torch::Tensor excess = (g - w).abs() - (atol + rtol * w.abs());
  double worst = excess.max().item<double>();
  if (worst <= 0) return ::testing::AssertionSuccess();
  int64_t flat = excess.argmax().item<int64_t>();
  return ::testing::AssertionFailure() << what << ": mismatch at flat index " << flat << ": got "
                                       << g.reshape(-1)[flat].item<double>() << ", want "
                                       << w.reshape(-1)[flat].item<double>() << " (atol " << atol << ", rtol "
                                       << rtol << ")";
}

egm::ModelConfig config_of(const TensorMap& f, const std::string& variant) {
  egm::ModelConfig c;
  c.variant = variant;
  c.n_layer = f.at("config.n_layer").item<int64_t>();
  c.n_head = f.at("config.n_head").item<int64_t>();
  c.d_model = f.at("config.d_model").item<int64_t>();
  c.block_size = f.at("config.block_size").item<int64_t>();
  c.vocab_size = f.at("config.vocab_size").item<int64_t>();
  c.dropout = f.at("config.dropout").item<double>();
  return c;
}

bool is_parameter_entry(const std::string& name) {
  for (const char* prefix : {"config.", "input.", "output.", "grad.", "short.", "prefix.", "debug."})
    if (name.rfind(prefix, 0) == 0) return false;
  return true;
}

class ReferenceCrossCheck : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (egm::test::reference_fixture_dir().empty()) GTEST_SKIP() << "PyTorch reference unavailable (python3-torch)";
    ASSERT_TRUE(std::filesystem::exists(fixture_path(GetParam()))) << "run the reference_fixtures test first";
    fixture = egm::test::read_egmt(fixture_path(GetParam()));
    model = egm::GPT(config_of(fixture, GetParam()));
    model->eval();
    torch::NoGradGuard no_grad;
    size_t loaded = 0;
    for (auto& p : model->named_parameters()) {
      auto it = fixture.find(p.key());
      ASSERT_NE(it, fixture.end()) << "reference has no parameter " << p.key();
      ASSERT_EQ(p.value().sizes(), it->second.sizes()) << p.key();
      p.value().copy_(it->second);
      ++loaded;
    }
    size_t in_fixture = 0;
    for (auto& [name, t] : fixture) in_fixture += is_parameter_entry(name);
    ASSERT_EQ(loaded, in_fixture) << "the reference has parameters the C++ model lacks";
  }
  TensorMap fixture;
  egm::GPT model{nullptr};
};

TEST_P(ReferenceCrossCheck, LogitsLossAndGradientsMatch) {
  torch::Tensor logits = model->forward(fixture.at("input.idx"));
  EXPECT_TRUE(close("logits", logits, fixture.at("output.logits"), 1e-4, 1e-4));
  torch::Tensor loss = egm::GPTImpl::loss(logits, fixture.at("input.targets"));
  EXPECT_TRUE(close("loss", loss, fixture.at("output.loss"), 1e-5, 1e-5));
  loss.backward();
  for (auto& p : model->named_parameters()) {
    const torch::Tensor& want = fixture.at("grad." + p.key());
    ASSERT_TRUE(p.value().grad().defined()) << "no gradient for " << p.key();
    EXPECT_TRUE(close("grad." + p.key(), p.value().grad(), want, 1e-5, 1e-3));
  }
}

TEST_P(ReferenceCrossCheck, ShorterWindowMatches) {
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(close("short.logits", model->forward(fixture.at("short.idx")), fixture.at("short.logits"), 1e-4, 1e-4));
}

TEST_P(ReferenceCrossCheck, PrefixLogitsMatch) {
  torch::NoGradGuard no_grad;
  torch::Tensor prefix = egm::prefix_logits(*model, fixture.at("input.idx"));
  EXPECT_TRUE(close("prefix.logits", prefix, fixture.at("prefix.logits"), 1e-4, 1e-4));
}

std::vector<std::string> all_variants() {
  std::vector<std::string> out;
  for (const char* a : {"standard", "ega", "ega_causal"})
    for (const char* p : {"learned", "sincos", "mope", "rope", "rope_only", "alibi", "none"})
      out.push_back(std::string(a) + "+" + p);
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllVariants, ReferenceCrossCheck, ::testing::ValuesIn(all_variants()),
                         [](const auto& test_param) {
                           std::string n = test_param.param;
                           for (char& ch : n)
                             if (ch == '+') ch = '_';
                           return n;
                         });

}  // namespace
