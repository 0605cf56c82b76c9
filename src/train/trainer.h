// One training run (SPEC.md section 3): AdamW (0.9, 0.95, wd 0.1 on all
// parameters), warm-up + cosine, global-norm clipping, the paper's eval
// protocol every eval_interval steps, checkpoints, and at the end the
// deterministic full-validation and autoregressive measurements.
//
// Records go to a MetricsSink (see metrics_sink.h). With a Communicator of k
// ranks, each rank trains on its slice of the global batch and gradients are
// averaged; only rank 0 emits records and writes checkpoints.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/run_config.h"
#include "data/batch_sampler.h"
#include "data/corpus.h"
#include "dist/communicator.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/loss_scaler.h"
#include "train/metrics_sink.h"
#include "train/run_records.h"

namespace egm {

struct RunResult {
  Outcome status = Outcome::done;
  std::string message;            // why, for diverged/interrupted
  int64_t step = 0;               // optimiser steps completed
  int64_t resumed_from_step = -1; // -1: started from scratch
  double final_val = NAN;         // paper protocol at the last step
  double best_val = NAN;          // best paper-protocol val over the run
  double final_train = NAN;       // paper-protocol train loss at the last step
  double full_val = NAN;          // every val window
  double ar_val = NAN;            // autoregressive (prefix-only)
  double ar_ref_val = NAN;        // the same windows, full-window forward
  double tokens_per_s = NAN;
};

class Trainer {
 public:
  // `comm` may be null (one rank). The corpus must outlive the trainer.
  Trainer(const RunConfig& config, const RuntimeOptions& runtime, const Corpus& corpus, MetricsSink& sink,
          Communicator* comm = nullptr);

  // Trains to max_steps (resuming from runtime.out_dir's checkpoint if any).
  // `should_stop` is polled every step; when it returns true the run
  // checkpoints and returns status "interrupted".
  RunResult run(const std::function<bool()>& should_stop = {});

  // One optimiser step on the global batch of `state().step`; returns the
  // mean training loss (a 0-d tensor on the device; not synchronised).
  torch::Tensor train_step();

  GPTImpl& model() { return *model_; }
  const TrainState& state() const { return state_; }
  torch::Device device() const { return device_; }
  const std::string& config_hash() const { return config_hash_; }

 private:
  void evaluate_and_record(double elapsed);
  void record_final_measurements(RunResult& result);
  void checkpoint();
  void emit(nlohmann::json record);
  std::vector<torch::Device> rng_devices() const;

  RunConfig config_;
  RuntimeOptions runtime_;
  std::string config_hash_;
  MetricsSink& sink_;
  LocalCommunicator local_comm_;
  Communicator& comm_;
  torch::Device device_;
  bool autocast_ = false;
  at::ScalarType autocast_dtype_ = at::kBFloat16;
  BatchSampler sampler_;
  GPT model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  TrainState state_;
  double last_val_ = NAN, last_train_ = NAN;
  int64_t local_batch_ = 0, local_first_ = 0;
  LossScaler scaler_{false};
};

// Parses "cpu", "cuda", "cuda:N"; a CUDA device without CUDA is a ConfigError.
torch::Device parse_device(const std::string& name);

}  // namespace egm
