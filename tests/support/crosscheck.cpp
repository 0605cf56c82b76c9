#include "crosscheck.h"

#include "model/causality.h"

namespace egm::test {
namespace {

bool is_parameter_entry(const std::string& name) {
  for (const char* prefix : {"config.", "input.", "output.", "grad.", "short.", "prefix.", "debug."})
    if (name.rfind(prefix, 0) == 0) return false;
  return true;
}

}  // namespace

std::string fixture_path(const std::string& name) { return reference_fixture_dir() + "/" + name + ".egmt"; }

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

ModelConfig fixture_model_config(const TensorMap& f, const std::string& variant) {
  ModelConfig c;
  c.variant = variant;
  c.n_layer = f.at("config.n_layer").item<int64_t>();
  c.n_head = f.at("config.n_head").item<int64_t>();
  c.d_model = f.at("config.d_model").item<int64_t>();
  c.block_size = f.at("config.block_size").item<int64_t>();
  c.vocab_size = f.at("config.vocab_size").item<int64_t>();
  c.dropout = f.at("config.dropout").item<double>();
  if (auto it = f.find("config.conv_max_lag"); it != f.end()) c.conv_max_lag = it->second.item<int64_t>();
  return c;
}

::testing::AssertionResult load_reference_weights(GPTImpl& model, const TensorMap& fixture) {
  torch::NoGradGuard no_grad;
  size_t loaded = 0;
  for (auto& p : model.named_parameters()) {
    auto it = fixture.find(p.key());
    if (it == fixture.end()) return ::testing::AssertionFailure() << "reference has no parameter " << p.key();
    if (p.value().sizes() != it->second.sizes())
      return ::testing::AssertionFailure() << p.key() << ": shape " << p.value().sizes() << " vs reference "
                                           << it->second.sizes();
    p.value().copy_(it->second);
    ++loaded;
  }
  size_t in_fixture = 0;
  for (auto& [name, t] : fixture) in_fixture += is_parameter_entry(name);
  if (loaded != in_fixture)
    return ::testing::AssertionFailure() << "the reference has " << in_fixture << " parameters, the C++ model "
                                         << loaded << " (it lacks some)";
  return ::testing::AssertionSuccess();
}

void expect_logits_loss_and_gradients_match(GPTImpl& model, const TensorMap& fixture) {
  torch::Tensor logits = model.forward(fixture.at("input.idx"));
  EXPECT_TRUE(close("logits", logits, fixture.at("output.logits"), 1e-4, 1e-4));
  torch::Tensor loss = GPTImpl::loss(logits, fixture.at("input.targets"));
  EXPECT_TRUE(close("loss", loss, fixture.at("output.loss"), 1e-5, 1e-5));
  loss.backward();
  for (auto& p : model.named_parameters()) {
    const torch::Tensor& want = fixture.at("grad." + p.key());
    ASSERT_TRUE(p.value().grad().defined()) << "no gradient for " << p.key();
    EXPECT_TRUE(close("grad." + p.key(), p.value().grad(), want, 1e-5, 1e-3));
  }
}

void expect_shorter_window_matches(GPTImpl& model, const TensorMap& fixture) {
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(close("short.logits", model.forward(fixture.at("short.idx")), fixture.at("short.logits"), 1e-4, 1e-4));
}

void expect_prefix_logits_match(GPTImpl& model, const TensorMap& fixture) {
  torch::NoGradGuard no_grad;
  torch::Tensor prefix = prefix_logits(model, fixture.at("input.idx"));
  EXPECT_TRUE(close("prefix.logits", prefix, fixture.at("prefix.logits"), 1e-4, 1e-4));
}

}  // namespace egm::test
