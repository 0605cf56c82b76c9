// The C++ model against the independent PyTorch reference (tests/reference):
// same weights in, same logits, loss and gradients out, for every attention x
// position variant; plus prefix-only logits for the causality audit.
#include <gtest/gtest.h>

#include <filesystem>

#include "crosscheck.h"

namespace {

class ReferenceCrossCheck : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (egm::test::reference_fixture_dir().empty()) GTEST_SKIP() << "PyTorch reference unavailable (python3-torch)";
    const std::string path = egm::test::fixture_path(GetParam());
    ASSERT_TRUE(std::filesystem::exists(path)) << "run the reference_fixtures test first";
    fixture = egm::test::read_egmt(path);
    model = egm::GPT(egm::test::fixture_model_config(fixture, GetParam()));
    model->eval();
    ASSERT_TRUE(egm::test::load_reference_weights(*model, fixture));
  }
  egm::test::TensorMap fixture;
  egm::GPT model{nullptr};
};

TEST_P(ReferenceCrossCheck, LogitsLossAndGradientsMatch) {
  egm::test::expect_logits_loss_and_gradients_match(*model, fixture);
}

TEST_P(ReferenceCrossCheck, ShorterWindowMatches) { egm::test::expect_shorter_window_matches(*model, fixture); }

TEST_P(ReferenceCrossCheck, PrefixLogitsMatch) { egm::test::expect_prefix_logits_match(*model, fixture); }

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
