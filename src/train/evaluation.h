// The three ways a run measures validation loss (all in eval mode, no grad):
//  - the paper's protocol: mean over M random batches per split;
//  - a deterministic pass over every non-overlapping window of a split (no
//    sampling noise, so 0.01 effects between variants become visible);
//  - autoregressive: each position sees only its own prefix (one forward per
//    prefix length) on a fixed, evenly spaced subset of windows, next to the
//    usual full-window loss on the same windows. For causal variants the two
//    agree; for the paper's EGA the gap is what its gate gains from the future.
// With a communicator of k ranks each rank evaluates a disjoint share and the
// results are combined, so every rank returns the same numbers.
#pragma once

#include <torch/torch.h>

#include "data/batch_sampler.h"
#include "dist/communicator.h"
#include "model/gpt.h"

namespace egm {

struct EvalContext {
  GPTImpl& model;
  const BatchSampler& sampler;
  torch::Device device;
  Communicator& comm;
  bool autocast = false;               // CUDA autocast as in training
  at::ScalarType autocast_dtype = at::kBFloat16;
};

double evaluate_random_batches(const EvalContext& ctx, Split split, int64_t step, int64_t batches, int64_t batch_size);

struct WindowsLoss {
  double loss = 0.0;    // mean token cross-entropy
  int64_t windows = 0;
};
WindowsLoss evaluate_all_windows(const EvalContext& ctx, Split split, int64_t batch_size);

struct AutoregressiveLoss {
  double prefix_loss = 0.0;  // each position from its own prefix
  double window_loss = 0.0;  // the same windows, full-window forward
  int64_t windows = 0;
};
AutoregressiveLoss evaluate_autoregressive(const EvalContext& ctx, int64_t windows);

// The share of keys each EGA head's gate passes (GPTImpl::gate_open_shares) on `windows`
// evenly spaced validation windows: the same windows at every eval and no generator
// drawn from, so measuring it changes nothing about the run. Every rank computes the
// same numbers. Empty for models without an EGA gate.
LearnedParams measure_gate_open_shares(const EvalContext& ctx, int64_t windows);

// The windows the autoregressive evaluation uses: `count` evenly spaced indices.
std::vector<int64_t> autoregressive_window_indices(int64_t available, int64_t count);

}  // namespace egm
