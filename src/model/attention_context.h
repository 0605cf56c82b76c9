// What a position encoding hands to every attention layer of one forward:
// RoPE's rotation tables and an additive score bias that already holds the
// causal mask (and ALiBi's distance penalty when used). The CPU attention
// kernels apply the mask themselves and take only the ALiBi part.
#pragma once

#include <ATen/core/Tensor.h>

namespace egm {

struct AttentionContext {
  at::Tensor rope_cos;    // [T, head/2], undefined without RoPE
  at::Tensor rope_sin;    // [T, head/2]
  at::Tensor score_bias;  // [1 or H, T, T]: 0 / -inf causal mask (+ ALiBi)
  at::Tensor alibi_bias;  // [H, T, T]: the ALiBi part alone, undefined without ALiBi
};

}  // namespace egm
