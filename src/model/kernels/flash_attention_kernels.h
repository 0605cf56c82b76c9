// Causal attention on CPU without a [B, H, T, T] tensor: the scores, the
// softmax, the attention dropout, the optional causal-EGA pair gate and the
// product with the values in one pass per block of query rows, forward and
// backward.
//
//   flash_causal_attention:        y = dropout(softmax(S)) v
//   flash_causal_gated_attention:  y = (dropout(softmax(S)) * G) v,  G_ij = sigmoid(a_i d_j + c_i)
//   with S = scale q k^T + bias, -inf above the diagonal.
//
// How: each (batch, head) pair goes to one of LibTorch's threads; for a block
// of 64 query rows the kernel computes their scores against keys 0..r1 (the
// keys the block can see) with one sgemm into a per-thread panel, takes each
// row's softmax in place (the whole causal row is in the panel, so no running
// maximum is needed), applies dropout and the gate while the panel is in
// cache, and multiplies by v. Only the row log-sum-exp [B, H, T] is kept for
// backward, which recomputes the panel from it (flash attention's recipe; its
// online softmax over key tiles is unnecessary while a row of T floats fits
// in cache). At the paper preset that replaces 4-5 tensors of 128 MiB per
// layer (scores, probabilities, their gradients; the probabilities kept for
// backward) with 64 x T floats per thread.
//
// Same results as causal_scores + softmax + causal_(gated_)dropout_matmul
// (causal_attention_kernels.h) to float32 rounding, with the same dropout mask:
// one DropoutMask drawn per call over the [B, H, T, T] index space.
// Published EGA's key gate needs no kernel of its own: sum_j A_ij g_j v_j and
// sum_j A_ij g_j are A [g v | g] (see energy_gated_attention.cpp).
//
// CPU float32 only (causal_kernels_apply); bias is not differentiated (ALiBi).
#pragma once

#include <torch/torch.h>

namespace egm {

// Whether the attention layers take these kernels where they apply. On by
// default; EGM_ATTENTION_KERNEL=panels in the environment selects the older
// kernels that store [B, H, T, T] (for comparison), as does set_flash_attention(false).
bool flash_attention_enabled();
void set_flash_attention(bool enabled);

// q, k: [B, H, T, D], v: [B, H, T, E] (contiguous last axis); bias: [1 or H, T, T] or undefined.
// Returns [B, H, T, E]. Dropout with probability p only when training.
torch::Tensor flash_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                     double scale, const torch::Tensor& bias, double p, bool training);

// The same with the pair gate formed on the fly; a, c, d: float32 [B, H, T]. Differentiable in
// q, k, v, a, c, d.
torch::Tensor flash_causal_gated_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& a,
                                           const torch::Tensor& c, const torch::Tensor& d, const torch::Tensor& v,
                                           double scale, const torch::Tensor& bias, double p, bool training);

// flash_causal_attention from the fused projection qkv [B, T, 3 * n_head * D] (rows Q | K | V,
// head-major within each, as AttentionImpl's c_attn writes them) to the merged heads
// [B, T, n_head * D]: the kernels read q, k, v in place and write y, and in backward the one
// gradient [B, T, 3 * n_head * D], in the layouts the projections use, so neither the head split
// nor the merge copies anything. Differentiable in qkv.
torch::Tensor flash_causal_attention_qkv(const torch::Tensor& qkv, int64_t n_head, double scale,
                                         const torch::Tensor& bias, double p, bool training);

// [..., E + 1] = [num | den] -> num / max(den, 1e-8): the renormalisation of the gated mixes.
torch::Tensor divide_by_last_column(const torch::Tensor& num_den);

}  // namespace egm
