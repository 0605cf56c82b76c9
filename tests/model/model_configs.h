// The model tests' configs: a GPT of a given variant and size, small enough for
// the CPU, written once instead of field by field in every test.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.h"

namespace egm::test {

// This variant at this size; dropout 0 unless given. The variant's fixed options
// (config/variants.h) are not applied: call apply_variant_options where they matter.
inline ModelConfig sized_model(const std::string& variant, int64_t n_layer, int64_t n_head, int64_t d_model,
                               int64_t block_size, int64_t vocab_size, double dropout = 0.0) {
  ModelConfig c;
  c.variant = variant;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.d_model = d_model;
  c.block_size = block_size;
  c.vocab_size = vocab_size;
  c.dropout = dropout;
  return c;
}

// The tests' usual small model: 2 layers, 4 heads, d_model 32, context 24, 13 symbols, no dropout.
inline ModelConfig small_model(const std::string& variant) {
  return sized_model(variant, /*n_layer=*/2, /*n_head=*/4, /*d_model=*/32, /*block_size=*/24, /*vocab_size=*/13);
}

// The tiny preset's model, dropout 0: the same function whatever runs it (another
// precision, another device; their dropout streams differ).
inline ModelConfig tiny_model(const std::string& variant) {
  ModelConfig c = preset_config("tiny").model;
  c.variant = variant;
  c.dropout = 0.0;
  return c;
}

}  // namespace egm::test
