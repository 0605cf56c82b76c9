// The ablation attentions (src/model/ABLATIONS.md) against the PyTorch
// reference, which implements the same contract independently: fixtures
// `<attention kind>+learned.egmt` (conv with conv_max_lag from the fixture).
// A kind whose fixture the reference does not write yet is skipped, so either
// side can land first; once the file exists the checks are those of the base
// variants (tests/support/crosscheck.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "crosscheck.h"

namespace {

class AblationCrossCheck : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (egm::test::reference_fixture_dir().empty()) GTEST_SKIP() << "PyTorch reference unavailable (python3-torch)";
    const std::string name = GetParam() + "+learned";
    const std::string path = egm::test::fixture_path(name);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "the reference writes no " << path << " yet";
    fixture = egm::test::read_egmt(path);
    egm::ModelConfig config = egm::test::fixture_model_config(fixture, name);
    if (GetParam() == "conv") {
      ASSERT_TRUE(fixture.count("config.conv_max_lag")) << "conv fixture without conv_max_lag";
    }
    model = egm::GPT(config);
    model->eval();
    ASSERT_TRUE(egm::test::load_reference_weights(*model, fixture));
  }
  egm::test::TensorMap fixture;
  egm::GPT model{nullptr};
};

TEST_P(AblationCrossCheck, LogitsLossAndGradientsMatch) {
  egm::test::expect_logits_loss_and_gradients_match(*model, fixture);
}

TEST_P(AblationCrossCheck, ShorterWindowMatches) { egm::test::expect_shorter_window_matches(*model, fixture); }

TEST_P(AblationCrossCheck, PrefixLogitsMatch) { egm::test::expect_prefix_logits_match(*model, fixture); }

INSTANTIATE_TEST_SUITE_P(AblationKinds, AblationCrossCheck,
                         ::testing::Values("conv", "ega2", "ega4", "ega_morlet", "ega_db2", "ega_db4", "mq_e",
                                           "mq_ep", "mq_ef", "mq_epf"),
                         [](const auto& test_param) { return std::string(test_param.param); });

}  // namespace
