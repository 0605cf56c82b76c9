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
#include "train/cuda_graph.h"
#include "train/fused_adamw.h"
#include "train/loss_scaler.h"
#include "run/outcome.h"
#include "run/records.h"
#include "train/metrics_sink.h"

namespace egm {

class Trainer {
 public:
  // `comm` may be null (one rank). The corpus must outlive the trainer.
  Trainer(const RunConfig& config, const RuntimeOptions& runtime, const Corpus& corpus, MetricsSink& sink,
          Communicator* comm = nullptr);

  // Trains to max_steps (resuming from runtime.out_dir's checkpoint if any)
  // and says how it ended: the RunOutcome a worker's RESULT carries as it is.
  // `should_stop` is polled every step; when it returns true the run
  // checkpoints and returns status "interrupted".
  RunOutcome run(const std::function<bool()>& should_stop = {});

  // One optimiser step on the global batch of `state().step`; returns the
  // mean training loss (a 0-d tensor on the device; not synchronised).
  torch::Tensor train_step();

  GPTImpl& model() { return *model_; }
  const TrainState& state() const { return state_; }
  torch::Device device() const { return device_; }
  const std::string& config_hash() const { return config_hash_; }

 private:
  torch::Tensor graphed_train_step(const Batch& batch, double lr);
  void evaluate_and_record(double elapsed);
  void record_final_measurements(Measurements& measured);
  void checkpoint();
  void emit(Record record);
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
  std::unique_ptr<FusedAdamW> fused_;  // train.optimizer_path fused: steps optimizer_'s state in one call
  // train.cuda_graphs: the step's graph and the tensors it reads and writes in place.
  std::unique_ptr<CudaGraphStep> graph_;
  int64_t graph_warmup_left_ = 3;
  torch::Tensor graph_x_, graph_y_, graph_lr_, graph_loss_;
  TrainState state_;
  double last_val_ = NAN, last_train_ = NAN;
  int64_t local_batch_ = 0, local_first_ = 0;
  LossScaler scaler_{false};
};

// The torch::Device of a DeviceName on this machine ("cuda" is device 0); a
// CUDA device this build or machine lacks is a ConfigError. A CUDA device is made
// the process's current device here, once per worker: a rank on GPU 3 then never
// creates a context on GPU 0 (the default current device) for work without an
// explicit device.
torch::Device torch_device(const DeviceName& device);

}  // namespace egm
