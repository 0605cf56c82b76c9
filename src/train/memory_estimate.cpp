// A run's memory from its config: parameters, gradients and AdamW moments,
// the activations a step keeps (the CPU kernels keep no [B, H, T, T]), a summary line.
#include "train/memory_estimate.h"

#include <fmt/format.h>

#include "config/variants.h"
#include "model/kernels/flash_attention_kernels.h"
#include "model/gpt.h"

namespace egm {
namespace {

constexpr double kMB = 1024.0 * 1024.0;

// [B, T, d]-sized fp32 tensors one pre-LN block keeps for backward: the
// LayerNorm input and output (2), q, k, v (3) and their per-head copies (3),
// the merged heads (1), the output projection's input (1), the second
// LayerNorm's input and output (2), the MLP's [B, T, 4d] input to GELU and
// its output (4 + 4), and two dropout masks (bool: 2 x 1/4).
constexpr double kActivationsPerLayer = 20.5;

// [B, H, T, T]-sized fp32 tensors per layer kept for backward, by attention
// kind and path, plus what backward holds at once for one layer (the gradient
// of the probabilities and of the scores: 2). On the CPU the flash kernels
// (flash_attention_kernels.h, the default) form none: 0 and no transients.
// The older CPU kernels (EGM_ATTENTION_KERNEL=panels) keep only the probabilities (the dropout mask is recomputed, EGA's key gate
// rides in the value matrix, causal EGA's pair gate is formed in the kernel).
// LibTorch's generic ops (CUDA) keep the probabilities, the dropout mask (1/4)
// and the dropped probabilities; EGA adds the gated matrix, causal EGA the
// gate's logits and the gate.
bool cpu_kernel_attention(const std::string& attention) {
  return attention == "standard" || attention == "ega" || attention == "ega_causal";
}

double attention_matrices(const std::string& attention, bool cuda) {
  if (!cuda && (attention == "standard" || attention == "ega" || attention == "ega_causal")) return 1.0;
  if (attention == "standard") return 2.25;
  if (attention == "ega") return 3.25;
  if (attention == "ega_causal") return 5.25;
  return 3.25;  // the ablations: generic ops with one gated matrix
}

}  // namespace

std::string MemoryEstimate::summary() const {
  return fmt::format("{:.0f} MB (weights {:.0f}, activations {:.0f}, attention {:.0f}, logits {:.0f}, runtime {:.0f})",
                     total_mb(), weights_mb, activations_mb, attention_mb, logits_mb, runtime_mb);
}

MemoryEstimate estimate_training_memory(const RunConfig& c, int64_t parameters, bool cuda, double runtime_mb) {
  const double B = static_cast<double>(c.train.batch_size), T = static_cast<double>(c.model.block_size);
  const double d = static_cast<double>(c.model.d_model), H = static_cast<double>(c.model.n_head);
  const double L = static_cast<double>(c.model.n_layer), V = static_cast<double>(c.model.vocab_size);
  const double f32 = 4.0;
  const std::string attention = resolve_variant(c.model.variant).attention;
  MemoryEstimate e;
  e.weights_mb = 16.0 * static_cast<double>(parameters) / kMB;
  // Every layer's [B, T, d] tensors, the embeddings' two, the final LayerNorm's two.
  e.activations_mb = (L * kActivationsPerLayer + 4.0) * B * T * d * f32 / kMB;
  // Every layer's kept matrices, and backward's two transients of one layer.
  const bool flash = !cuda && flash_attention_enabled() && cpu_kernel_attention(attention);
  e.attention_mb = flash ? 0.0 : (L * attention_matrices(attention, cuda) + 2.0) * B * H * T * T * f32 / kMB;
  e.logits_mb = 3.0 * B * T * V * f32 / kMB;
  e.runtime_mb = runtime_mb;
  return e;
}

MemoryEstimate estimate_training_memory(const RunConfig& c, bool cuda, double runtime_mb) {
  return estimate_training_memory(c, GPT(c.model)->num_parameters(), cuda, runtime_mb);
}

}  // namespace egm
