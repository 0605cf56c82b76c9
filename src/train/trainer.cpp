// Trainer: the model, data and optimiser built from a run config, resumed from
// a checkpoint when one is there, then the training loop with evals and records.
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <thread>
#include <utility>

#include "egm/version_info.h"
#include "model/energy_gate_functions.h"
#include "model/kernels/cpu_blas.h"
#include "train/cuda_memory.h"
#include "train/evaluation.h"
#include "train/loss_scaler.h"
#include "train/lr_schedule.h"
#include "util/error.h"
#include "util/log.h"
#include "util/seed.h"
#include "util/torch_compat.h"

namespace egm {
namespace {

constexpr uint64_t kDropoutStream = 0x64726f70;  // "drop"

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Validation windows the EGA gate statistics are measured on at each eval.
constexpr int64_t kGateProbeWindows = 8;

// The checkpoint header's "extra" object holds the trainer's own numbers (NaN as null).
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
double number_or_nan(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

}  // namespace

torch::Device torch_device(const DeviceName& device) {
  if (!device.is_cuda()) return torch::Device(torch::kCPU);
  require_buildable(device);
  const int gpus = static_cast<int>(torch::cuda::device_count());
  EGM_REQUIRE(gpus > 0, ConfigError, "--device {}: no GPU is visible on this machine (CUDA_VISIBLE_DEVICES?)",
              device.str());
  EGM_REQUIRE(device.index < gpus, ConfigError, "--device {}: this machine has {} GPU{} (cuda:0..cuda:{})",
              device.str(), gpus, gpus == 1 ? "" : "s", gpus - 1);
  make_cuda_device_current(std::max(0, device.index));
  return device.index < 0 ? torch::Device(torch::kCUDA) : torch::Device(torch::kCUDA, static_cast<int8_t>(device.index));
}

Trainer::Trainer(const RunConfig& config, const RuntimeOptions& runtime, const Corpus& corpus, MetricsSink& sink,
                 Communicator* comm)
    : config_(config),
      runtime_(runtime),
      sink_(sink),
      comm_(comm ? *comm : static_cast<Communicator&>(local_comm_)),
      device_(torch_device(runtime.device)),
      sampler_(corpus, config.model.block_size, config.train.seed) {
  if (config_.model.vocab_size != corpus.vocab_size()) {
    log::debug("vocab_size {} -> {} (from the corpus)", config_.model.vocab_size, corpus.vocab_size());
    config_.model.vocab_size = corpus.vocab_size();
  }
  validate(config_);
  config_hash_ = egm::config_hash(config_);
  const TrainConfig& t = config_.train;
  EGM_REQUIRE(t.batch_size % comm_.size() == 0, ConfigError,
              "train.batch_size {} is not divisible by the data-parallel degree {}", t.batch_size, comm_.size());
  EGM_REQUIRE(t.precision != "fp16" || device_.is_cuda(), ConfigError,
              "train.precision {} needs a CUDA device (this run is on {}); use fp32 or bf16 on CPU", t.precision,
              device_.str());
  autocast_ = t.precision != "fp32";
  autocast_dtype_ = t.precision == "fp16" ? at::kHalf : at::kBFloat16;
  scaler_ = LossScaler(t.precision == "fp16");
  local_batch_ = t.batch_size / comm_.size();
  local_first_ = comm_.rank() * local_batch_;
  // Debian's LibTorch runs one intra-op thread unless told; 0 means every core. OpenBLAS
  // keeps its own pool (all cores by default): it gets the same count.
  set_compute_threads(runtime_.threads > 0 ? runtime_.threads
                                           : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  if (device_.is_cpu()) {
    static const std::string blas_warning = blas_kernel_warning();  // once per process
    static bool warned = false;
    if (!blas_warning.empty() && !std::exchange(warned, true)) log::warn("{}", blas_warning);
  }

  model_ = build_model(config_.model, t.seed);
  model_->to(device_);
  optimizer_ = std::make_unique<torch::optim::AdamW>(
      model_->parameters(), torch::optim::AdamWOptions(t.lr)
                                .betas({t.beta1, t.beta2})
                                .eps(t.adam_eps)
                                .weight_decay(t.weight_decay));
  if (resolved_optimizer_path(t, device_.is_cuda()) == "fused") fused_ = std::make_unique<FusedAdamW>(*optimizer_);
  if (t.cuda_graphs) {
    EGM_REQUIRE(device_.is_cuda(), ConfigError,
                "train.cuda_graphs needs a CUDA device (this run is on {}): a CUDA graph replays GPU kernels; "
                "drop the field for a CPU run",
                device_.str());
    EGM_REQUIRE(fused_, ConfigError, "train.cuda_graphs needs train.optimizer_path fused or auto (the step's "
                                     "clipping and optimizer must not read back to the host)");
    EGM_REQUIRE(t.precision != "fp16", ConfigError,
                "train.cuda_graphs with fp16: the loss scaler checks gradients on the host; use bf16 or fp32");
    EGM_REQUIRE(comm_.size() == 1, ConfigError, "train.cuda_graphs runs on one rank (world size {} given)",
                comm_.size());
    graph_ = std::make_unique<CudaGraphStep>();
  }
  // Dropout draws from the default generator of the device; each rank its own stream
  // (reseeded per step in train_step).
  const uint64_t dropout_seed = derive_seed(t.seed, kDropoutStream, static_cast<uint64_t>(comm_.rank()));
  for (const auto& d : rng_devices()) compat::default_generator(d).set_current_seed(dropout_seed);

  if (!runtime_.out_dir.empty()) {
    std::vector<std::string> problems;
    auto loaded = load_checkpoint(runtime_.out_dir, *model_, *optimizer_, config_hash_, rng_devices(), &problems);
    for (const auto& p : problems) {
      log::warn("skipping checkpoint: {}", p);
      emit(EventRecord{TrainerEvent::checkpoint_skipped, p, std::nullopt, std::nullopt});
    }
    if (loaded) {
      state_ = loaded->state;
      last_val_ = number_or_nan(state_.extra, "last_val");
      last_train_ = number_or_nan(state_.extra, "last_train");
      log::info("resumed from {} at step {}", loaded->path, state_.step);
      emit(EventRecord{TrainerEvent::resumed,
                       problems.empty() ? "resumed from the latest checkpoint"
                                        : "resumed from an older checkpoint; newer ones were unusable",
                       state_.step, loaded->path});
    } else if (!problems.empty()) {
      emit(EventRecord{TrainerEvent::restart_from_scratch, "no usable checkpoint; training from step 0", std::nullopt,
                       std::nullopt});
    }
  }
}

std::vector<torch::Device> Trainer::rng_devices() const {
  std::vector<torch::Device> devices{torch::kCPU};
  if (device_.is_cuda()) devices.push_back(device_.has_index() ? device_ : torch::Device(torch::kCUDA, 0));
  return devices;
}

void Trainer::emit(Record record) {
  if (comm_.rank() != 0) return;  // one rank speaks for the run
  sink_.emit(record);
}

torch::Tensor Trainer::train_step() {
  const TrainConfig& t = config_.train;
  model_->train();
  // The schedule is a pure function of the step, so a resumed run takes up the same lr.
  const double lr = learning_rate(t, state_.step);
  for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);

  // The batch is a pure function of (seed, step) and this rank's slice of the global
  // batch: the same windows on any world size, and again after a resume.
  Batch b = sampler_.train_batch(state_.step, t.batch_size, local_first_, local_batch_);
  // Dropout draws from the device's default generator, reseeded from (seed, rank, step)
  // each step: each rank has its own masks, and a resumed rank draws the masks the
  // uninterrupted run would have (the checkpoint holds only rank 0's generator state).
  const uint64_t dropout_seed = derive_seed(t.seed, kDropoutStream, static_cast<uint64_t>(comm_.rank()),
                                            static_cast<uint64_t>(state_.step));
  for (const auto& d : rng_devices()) compat::default_generator(d).set_current_seed(dropout_seed);
  if (graph_) return graphed_train_step(b, lr);
  torch::Tensor x = b.x.to(device_), y = b.y.to(device_);
  torch::Tensor loss;
  {
    // Autocast covers the forward only; the loss and the backward follow its dtypes,
    // and the parameters and optimiser state stay fp32.
    compat::AutocastGuard autocast(autocast_, device_.type(), autocast_dtype_);
    loss = GPTImpl::loss(model_->forward(x), y);
  }
  // Gradients set to none, not zeroed: backward then writes them instead of adding to zeros.
  optimizer_->zero_grad();
  scaler_.scale(loss).backward();

  std::vector<torch::Tensor> params = model_->parameters();
  if (comm_.size() > 1) {
    // Each rank's loss is the mean over its slice; the mean of the ranks' gradients is
    // the gradient of the global batch's mean loss (slices are equal in size).
    std::vector<torch::Tensor> grads;
    for (auto& p : params)
      if (p.grad().defined()) grads.push_back(p.grad());
    comm_.allreduce_mean(grads);
  }
  // fp16: the gradients unscaled first, and a step with inf/NaN in them skipped (the only
  // host sync of an fp16 step); fp32 and bf16 always step.
  if (scaler_.unscale_and_check(params)) {
    if (fused_) {
      // One kernel for every parameter, the clip factor computed and applied on the device.
      fused_->step(lr, t.grad_clip);
    } else {
      // LibTorch's clip_grad_norm_ reads the norm back (a host sync) and its AdamW loops per parameter.
      if (t.grad_clip > 0) torch::nn::utils::clip_grad_norm_(params, t.grad_clip);
      optimizer_->step();
    }
  }
  ++state_.step;
  // Not read here: the caller syncs on it only every log_interval steps.
  return loss.detach();
}

torch::Tensor Trainer::graphed_train_step(const Batch& b, double lr) {
  const TrainConfig& t = config_.train;
  // The graph reads the batch and the lr and writes the loss at fixed addresses: copied in, read out.
  if (!graph_x_.defined()) {
    graph_x_ = b.x.to(device_);
    graph_y_ = b.y.to(device_);
    graph_lr_ = torch::full({}, lr, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  } else {
    graph_x_.copy_(b.x);
    graph_y_.copy_(b.y);
    graph_lr_.fill_(lr);
  }
  auto step = [this, &t] {
    {
      compat::AutocastGuard autocast(autocast_, device_.type(), autocast_dtype_);
      graph_loss_ = GPTImpl::loss(model_->forward(graph_x_), graph_y_);
    }
    graph_loss_.backward();
    fused_->step(graph_lr_, t.grad_clip);
  };
  if (graph_warmup_left_ > 0) {
    // Real steps, run eagerly on the capture's stream first.
    --graph_warmup_left_;
    optimizer_->zero_grad();
    graph_->run_on_side_stream(step);
  } else if (!graph_->captured()) {
    // The gradients are allocated inside the capture, so every replay writes them in the same place.
    optimizer_->zero_grad();
    NoHostReads no_reads;   // a capture cannot read a value back: every replay must take the same path
    graph_->capture(step);  // counts the host steps once, replays once
  } else {
    // The dropout generator was reseeded for this step above; the replay reads its seed.
    graph_->replay();
    fused_->advance_host_steps();
  }
  ++state_.step;
  return graph_loss_.detach().clone();  // the next replay overwrites graph_loss_
}

void Trainer::checkpoint() {
  if (runtime_.out_dir.empty()) return;
  state_.extra["last_val"] = number_or_null(last_val_);
  state_.extra["last_train"] = number_or_null(last_train_);
  if (comm_.rank() == 0) save_checkpoint(runtime_.out_dir, *model_, *optimizer_, state_, config_hash_, rng_devices());
  comm_.barrier();  // nobody runs ahead of a checkpoint that may be read back
  emit(CheckpointRecord{state_.step});
}

void Trainer::evaluate_and_record(double elapsed) {
  const TrainConfig& t = config_.train;
  EvalContext ctx{*model_, sampler_, device_, comm_, autocast_, autocast_dtype_};
  last_train_ = evaluate_random_batches(ctx, Split::train, state_.step, t.eval_batches, t.batch_size);
  last_val_ = evaluate_random_batches(ctx, Split::val, state_.step, t.eval_batches, t.batch_size);
  emit(EvalRecord{state_.step, MetricSplit::eval_train, finite_or_none(last_train_), std::nullopt});
  emit(EvalRecord{state_.step, MetricSplit::eval_val, finite_or_none(last_val_), elapsed});
  if (std::isfinite(last_val_) && last_val_ < state_.best_val) {
    state_.best_val = last_val_;
    state_.best_val_step = state_.step;
  }
  LearnedParams params = model_->learned_params();
  for (LearnedParam& p : measure_gate_open_shares(ctx, kGateProbeWindows)) params.push_back(std::move(p));
  emit(ParamsRecord{state_.step, std::move(params)});
}

void Trainer::record_final_measurements(Measurements& m) {
  const TrainConfig& t = config_.train;
  EvalContext ctx{*model_, sampler_, device_, comm_, autocast_, autocast_dtype_};
  if (t.full_val_eval) {
    WindowsLoss full = evaluate_all_windows(ctx, Split::val, t.batch_size);
    m.full_val = finite_or_none(full.loss);
    emit(FinalEvalRecord{MetricSplit::val_full, m.full_val, full.windows});
  }
  if (t.ar_eval_windows > 0) {
    AutoregressiveLoss ar = evaluate_autoregressive(ctx, t.ar_eval_windows);
    m.ar_val = finite_or_none(ar.prefix_loss);
    m.ar_ref_val = finite_or_none(ar.window_loss);
    emit(FinalEvalRecord{MetricSplit::val_ar, m.ar_val, ar.windows});
    emit(FinalEvalRecord{MetricSplit::val_ar_ref, m.ar_ref_val, ar.windows});
  }
}

RunOutcome Trainer::run(const std::function<bool()>& should_stop) {
  const TrainConfig& t = config_.train;
  RunOutcome outcome;
  if (state_.step > 0) outcome.resumed_from_step = state_.step;
  Measurements& measured = outcome.measured;
  // Every ending goes through here: the outcome gets the numbers the run has
  // now, and the status record says how it ended.
  auto finish = [&](Outcome status, const std::string& message) {
    outcome.status = status;
    outcome.message = message;
    outcome.step = state_.step;
    measured.final_val = finite_or_none(last_val_);
    measured.final_train = finite_or_none(last_train_);
    measured.best_val = finite_or_none(state_.best_val);
    emit(EndRecord{outcome});
    return outcome;
  };

  // A run that already finished (its final measurements are in the checkpoint) just reports them.
  if (state_.step >= t.max_steps && state_.extra.contains("final")) {
    const auto& f = state_.extra["final"];
    measured.full_val = finite_or_none(number_or_nan(f, "full_val"));
    measured.ar_val = finite_or_none(number_or_nan(f, "ar_val"));
    measured.ar_ref_val = finite_or_none(number_or_nan(f, "ar_ref_val"));
    return finish(Outcome::done, "already complete");
  }

  // What this run really runs with: the worker's database row takes the
  // device and backend from here, not from the coordinator's prediction.
  RunEnvironment setup;
  setup.config_hash = config_hash_;
  setup.world_size = comm_.size();
  setup.backend = comm_.backend();
  setup.device = runtime_.device;
  if (device_.is_cuda()) setup.device.index = device_.has_index() ? device_.index() : 0;
  setup.torch_version = compat::torch_version();
  setup.egm_commit = EGM_GIT_COMMIT;
  setup.threads = torch::get_num_threads();
  emit(StartRecord{state_.step, setup});
  const auto t0 = std::chrono::steady_clock::now();
  if (state_.step == 0) evaluate_and_record(0.0);

  const int64_t log_interval = std::max<int64_t>(1, runtime_.log_interval);
  const int64_t start_step = state_.step;
  auto last_log = std::chrono::steady_clock::now();
  int64_t last_log_step = state_.step;
  while (state_.step < t.max_steps) {
    if (should_stop && should_stop()) {
      checkpoint();
      return finish(Outcome::interrupted, fmt::format("stopped at step {} and checkpointed", state_.step));
    }
    if (runtime_.fail_at_step == state_.step)
      EGM_THROW(Error, "injected failure at step {} (test-only fail_at_step)", state_.step);

    torch::Tensor loss = train_step();
    const bool at_eval = state_.step % t.eval_interval == 0 || state_.step == t.max_steps;
    if (state_.step % log_interval == 0 || at_eval) {
      // The only host sync of a step: the loss, averaged over the ranks, every log_interval steps.
      std::vector<torch::Tensor> l{loss.to(torch::kFloat64)};
      comm_.allreduce_mean(l);
      const double value = l[0].item<double>();
      const double dt = seconds_since(last_log);
      const double tokens = static_cast<double>((state_.step - last_log_step) * t.batch_size * config_.model.block_size);
      emit(ProgressRecord{state_.step, finite_or_none(value), learning_rate(t, state_.step - 1),
                          dt > 0 ? tokens / dt : 0.0, seconds_since(t0)});
      last_log = std::chrono::steady_clock::now();
      last_log_step = state_.step;
      if (!std::isfinite(value))
        return finish(Outcome::diverged, fmt::format("training loss became {} at step {}", value, state_.step));
    }
    if (at_eval) {
      evaluate_and_record(seconds_since(t0));
      if (!std::isfinite(last_val_))
        return finish(Outcome::diverged, fmt::format("validation loss became {} at step {}", last_val_, state_.step));
      checkpoint();
    } else if (runtime_.checkpoint_interval > 0 && state_.step % runtime_.checkpoint_interval == 0) {
      checkpoint();
    }
  }
  const double elapsed = seconds_since(t0);
  if (elapsed > 0)
    measured.tokens_per_s =
        static_cast<double>((state_.step - start_step) * t.batch_size * config_.model.block_size) / elapsed;
  record_final_measurements(measured);
  // Kept in the checkpoint, so a finished run asked again reports them (above).
  state_.extra["final"] = {{"full_val", number_or_null(measured.full_val.value_or(NAN))},
                           {"ar_val", number_or_null(measured.ar_val.value_or(NAN))},
                           {"ar_ref_val", number_or_null(measured.ar_ref_val.value_or(NAN))}};
  checkpoint();
  return finish(Outcome::done, "");
}

}  // namespace egm
