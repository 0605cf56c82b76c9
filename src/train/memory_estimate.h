// How much memory one training run needs, from its config alone: the
// parameters with their gradients and AdamW moments, the activations a step
// keeps for backward (counted tensor by tensor through the block, below), the
// attention matrices ([B, H, T, T], the term that grows with T^2), and the
// logits. egm sweep checks it, times the runs that share a device, against
// the host's memory (and the GPU's under --device cuda) before anything
// starts; egm bench prints it beside the measured peak.
#pragma once

#include <cstdint>
#include <string>

#include "config/run_config.h"

namespace egm {

struct MemoryEstimate {
  double weights_mb = 0;      // parameters + gradients + AdamW's two moments: 16 bytes per parameter
  double activations_mb = 0;  // [B, T, d]-sized tensors kept for backward, every layer
  double attention_mb = 0;    // [B, H, T, T] tensors kept for backward, plus backward's transients
  double logits_mb = 0;       // [B, T, V]: logits, log-softmax, their gradient
  double runtime_mb = 0;      // what the process holds before the model (libraries, CUDA context)
  double total_mb() const { return weights_mb + activations_mb + attention_mb + logits_mb + runtime_mb; }
  // "1234 MB (weights 77, activations 640, attention 480, logits 37, runtime 0)".
  std::string summary() const;
};

// `parameters`: the model's count (GPTImpl::num_parameters). `cuda`: the
// attention layers take LibTorch's generic ops there (the CPU kernels keep
// fewer [B, H, T, T] tensors). `runtime_mb`: added as it is.
MemoryEstimate estimate_training_memory(const RunConfig& config, int64_t parameters, bool cuda,
                                        double runtime_mb = 0);

// The same, counting the parameters by building the model on the CPU.
MemoryEstimate estimate_training_memory(const RunConfig& config, bool cuda, double runtime_mb = 0);

}  // namespace egm
