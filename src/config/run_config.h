// The configuration of one training run. Every field has a default from its
// preset (paper, small, tiny); a run config is JSON and unknown keys are refused.
//
// RunConfig holds what changes the science (its hash keys a sweep cell);
// RuntimeOptions holds how and where it runs (threads, device, paths) and is
// never hashed, so resuming on another machine finds the same cells.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "run/device.h"

namespace egm {

struct ModelConfig {
  std::string variant = "base";     // see config/variants.h
  int64_t n_layer = 6;              // transformer blocks
  int64_t n_head = 8;               // attention heads per block
  int64_t d_model = 256;            // residual width; d_model / n_head = head size
  int64_t block_size = 256;         // context length T
  int64_t vocab_size = 65;          // set from the corpus (65 for TinyShakespeare)
  double dropout = 0.1;             // embeddings, attention probabilities, both residuals
  double ega_tau_init = 0.0;        // EGA threshold tau at init (paper: 0)
  double ega_alpha_init = 2.0;      // EGA sharpness alpha at init (paper: 2)
  int64_t conv_max_lag = 0;         // conv attention: lags -L..L (ablation variants)
  bool qk_scale_init = false;       // Q/K of head h drawn with std 0.02*(1+(h mod 4)/4)
  // How standard, EGA and causal EGA attention compute (the same formula each way):
  // auto (the fused CPU kernels on CPU, at::scaled_dot_product_attention on CUDA),
  // kernels (today's path: the CPU kernels, plain ops elsewhere), sdpa, eager (plain ops).
  // Hashed only when not auto, so configs written before it keep their hash.
  std::string attention_path = "auto";

  int64_t head_size() const { return d_model / n_head; }
};

struct TrainConfig {
  uint64_t seed = 0;                // initialisation, data order and dropout all derive from it
  int64_t batch_size = 64;          // global batch B (windows per step, over all ranks)
  int64_t max_steps = 5000;         // optimiser steps
  double lr = 3e-4;                 // peak learning rate
  double min_lr = 0.0;              // cosine floor
  int64_t warmup_steps = 300;       // linear warm-up from 0
  double weight_decay = 0.1;        // AdamW, on all parameters (as the paper)
  double beta1 = 0.9;
  double beta2 = 0.95;
  double adam_eps = 1e-8;
  double grad_clip = 1.0;           // global grad-norm clip; 0 disables
  int64_t eval_interval = 500;      // paper protocol: eval every N steps and at the last
  int64_t eval_batches = 50;        // random batches per split per eval
  bool full_val_eval = true;        // deterministic pass over every val window at the end
  int64_t ar_eval_windows = 8;      // autoregressive (prefix-only) eval windows; 0 = off
  std::string precision = "fp32";   // fp32 | bf16 (autocast, CUDA or CPU) | fp16 (autocast + loss scaling, CUDA only)
  // AdamW's step: auto (fused on CUDA, LibTorch's per-parameter loop on CPU), fused
  // (at::_fused_adamw_, clipping folded in on the device, no host sync), libtorch.
  // Hashed only when not auto, like cuda_graphs when not false.
  std::string optimizer_path = "auto";
  bool cuda_graphs = false;         // CUDA: capture the static-shape step once and replay it
};

// The paths "auto" resolves to on a device (cpu: kernels / libtorch; cuda: sdpa / fused).
std::string resolved_attention_path(const ModelConfig& model, bool cuda);
std::string resolved_optimizer_path(const TrainConfig& train, bool cuda);

struct RunConfig {
  std::string preset = "paper";
  ModelConfig model;
  TrainConfig train;
};

struct RuntimeOptions {
  int threads = 0;                  // intra-op threads; 0 = all cores
  DeviceName device;                // cpu (default), cuda or cuda:N
  std::string data_path;            // corpus file; see data/corpus_source.h
  std::string out_dir;              // run directory (checkpoints, metrics.jsonl)
  int64_t checkpoint_interval = 0;  // steps between checkpoints; 0 = at evals only
  int64_t log_interval = 10;        // steps between progress records
  int64_t fail_at_step = -1;        // test-only failure injection (throws at that step)
};

// Names of the presets, and a preset's full config. Throws ConfigError when unknown.
const std::vector<std::string>& preset_names();
RunConfig preset_config(const std::string& preset);

// The canonical JSON form: {"preset":..., "model":{...}, "train":{...}}. The execution
// paths (attention_path, optimizer_path, cuda_graphs) appear only when not at their
// defaults, unless every_field (the list of fields a grid may vary).
nlohmann::json to_json(const RunConfig& config, bool every_field = false);

// Builds a config from JSON: the preset named in it (default "paper", or
// `default_preset`) supplies every field, the JSON overrides them. Unknown
// keys and wrong types are ConfigErrors naming the JSON path. Validates.
RunConfig run_config_from_json(const nlohmann::json& j, const std::string& default_preset = "paper");

// Applies overrides ({"model": {...}, "train": {...}}, or flat "model.n_layer")
// onto an existing config, with the same checks. Validates.
void apply_overrides(RunConfig& config, const nlohmann::json& overrides);

// Sets the options the model's variant fixes (config/variants.cpp: conv_l8 ->
// conv_max_lag 8, scale_init -> qk_scale_init). The JSON readers do this
// themselves (refusing a conflicting explicit value); a config built in code
// calls it after setting `variant`, or validate() refuses the mismatch.
void apply_variant_options(ModelConfig& model);

// Throws ConfigError with every problem found (sizes, divisibility, ranges, variant).
void validate(const RunConfig& config);

// The canonical JSON of a config (to_json(config).dump(): keys sorted): what
// cells.config_json stores and config_hash hashes.
std::string config_text(const RunConfig& config);
// sha256 of the canonical JSON: the identity of a run's science.
std::string config_hash(const RunConfig& config);
// The same, of a config_text already made (one dump for the text and the hash).
std::string config_hash_of_text(const std::string& config_text);

// ---- what makes two runs the same (run/identity.h) ------------------------------
// Two runs are the same run, and a sweep takes one's results for the other
// instead of training it again (egm sweep's reuse, db/reuse.h), when all of
// these are equal:
//   - config_hash of the fully resolved RunConfig: the preset, variant, seed,
//     every model and train field (precision is train.precision), and the grid
//     point's values, which the expansion sets in the config;
//   - the corpus's sha256;
//   - the device kind (cpu, cuda; not the GPU's model nor the CPU's threads);
//   - the world size (data-parallel ranks of the run);
//   - kNumericsVersion below, of the egm that trained it.
// A run whose corpus or numerics version is not recorded matches nothing.
//
// kNumericsVersion must be raised by every change to training that changes a
// seeded loss (a kernel, an initialisation, the data order, the optimiser's
// arithmetic), in the same commit, saying why. tests/train/test_numerics_version.cpp
// pins the bitwise final losses of a few tiny CPU runs to it, so such a change
// fails that test until the version is raised and the new losses are pinned.
// Versions: 1, the first recorded (issue 38).
inline constexpr int64_t kNumericsVersion = 1;

}  // namespace egm
