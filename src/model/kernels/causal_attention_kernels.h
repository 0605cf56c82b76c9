// CPU kernels for the two [B, H, T, T] matrix products of causal attention,
// with their backward passes:
//   causal_scores:                S = scale * q k^T + bias, -inf above the diagonal
//   causal_dropout_matmul:        y = dropout(P) v, P read on and below the diagonal
//   causal_gated_dropout_matmul:  the same with the causal EGA's pair gate
//                                 sigmoid(a_i d_j + c_i) multiplied in on the fly
//
// Why (measured at the paper preset, CPU): LibTorch's bmm walks the B*H
// batch serially and gives each small product to a multi-threaded BLAS; it
// took ~40% of a training step. Here the batch x head pairs are split across
// LibTorch's threads, each calling single-threaded BLAS on row blocks that
// stop at the diagonal (the causal mask makes the rest -inf / zero, so about
// 40% of those products need not run at T = 256); the score scale and bias
// go into the same GEMM; and the attention dropout is applied while the
// block is loaded, so its mask is never stored (backward recomputes it).
//
// Float32 CPU tensors only; the attention layers fall back to plain LibTorch
// ops elsewhere (CUDA, autocast).
#pragma once

#include <torch/torch.h>

namespace egm {

// True when these kernels can take the tensors (CPU, float32).
bool causal_kernels_apply(const torch::Tensor& a, const torch::Tensor& b);

// q, k: [B, H, T, D] (any strides with a contiguous last axis).
// bias: [1 or H, T, T] additive score bias (ALiBi) or undefined; not differentiated.
// Returns S: [B, H, T, T] contiguous, scale * q_i.k_j + bias_ij for j <= i and
// -inf for j > i.
torch::Tensor causal_scores(const torch::Tensor& q, const torch::Tensor& k, double scale,
                            const torch::Tensor& bias);

// P: [B, H, T, T] attention probabilities; entries above the diagonal are
// treated as 0 whatever they hold. v: [B, H, T, E].
// Returns dropout(P) v: [B, H, T, E], where dropout (probability p, only when
// training) uses DropoutMask (counter_dropout.h) over P's index space.
torch::Tensor causal_dropout_matmul(const torch::Tensor& P, const torch::Tensor& v, double p, bool training);

// (dropout(P) * G) v with G_ij = sigmoid(a_i d_j + c_i), for a, c, d: [B, H, T]
// float32 (a, c per query, d per key); differentiable in P, a, c, d and v. The
// gate is never stored: the forward and backward compute it block by block
// (for ega_causal it was two [B, H, T, T] tensors per layer). The dropout mask is
// the one causal_dropout_matmul would draw.
torch::Tensor causal_gated_dropout_matmul(const torch::Tensor& P, const torch::Tensor& a, const torch::Tensor& c,
                                          const torch::Tensor& d, const torch::Tensor& v, double p, bool training);

}  // namespace egm
