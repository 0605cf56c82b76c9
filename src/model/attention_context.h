// What a position encoding hands to every attention layer of one forward:
// RoPE's rotation tables and an additive score bias that already holds the
// causal mask (and ALiBi's distance penalty when used).
#pragma once

#include <torch/torch.h>

namespace egm {

struct AttentionContext {
  torch::Tensor rope_cos;    // [T, head/2], undefined without RoPE
  torch::Tensor rope_sin;    // [T, head/2]
  torch::Tensor score_bias;  // [1 or H, T, T]: 0 / -inf causal mask (+ ALiBi)
};

}  // namespace egm
