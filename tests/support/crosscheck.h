// The C++ model against a PyTorch reference fixture (tests/reference): load
// the reference weights by name, then compare logits, loss, every gradient,
// a shorter window and the prefix-only logits. Shared by the cross-check
// suites of the base variants and of the ablations.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "egmt.h"
#include "model/gpt.h"

namespace egm::test {

// <fixture dir>/<name>.egmt
std::string fixture_path(const std::string& name);

// Fails with the largest |got - want| beyond atol + rtol*|want| and its index.
::testing::AssertionResult close(const std::string& what, const torch::Tensor& got, const torch::Tensor& want,
                                 double atol, double rtol);

// The model config a fixture was made with (config.* entries; conv_max_lag when present).
ModelConfig fixture_model_config(const TensorMap& fixture, const std::string& variant);

// Copies every parameter from the fixture by name; fails when a name or a
// shape is missing on either side.
::testing::AssertionResult load_reference_weights(GPTImpl& model, const TensorMap& fixture);

// The checks, with the tolerances of tests/reference/README.md (logits and
// loss 1e-4, gradients atol 1e-5 rtol 1e-3).
void expect_logits_loss_and_gradients_match(GPTImpl& model, const TensorMap& fixture);
void expect_shorter_window_matches(GPTImpl& model, const TensorMap& fixture);
void expect_prefix_logits_match(GPTImpl& model, const TensorMap& fixture);

}  // namespace egm::test
