// A run's checkpoint: model, optimiser, every RNG state and the step, so a
// resumed run continues the same trajectory (bitwise on CPU).
//
// File: magic "EGMCKPT1", uint32 header length, a JSON header (format
// version, step, config hash, payload size and sha256, versions), then the
// payload (a LibTorch archive). Written atomically (temp + fsync + rename);
// the previous checkpoint is kept as checkpoint.prev.egmc, so a corrupt or
// truncated file (detected by the checksum) falls back to the one before.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace egm {

struct TrainState {
  int64_t step = 0;                   // optimiser steps completed
  double best_val = std::numeric_limits<double>::infinity();
  int64_t best_val_step = -1;
  nlohmann::json extra = nlohmann::json::object();  // anything else the trainer keeps (e.g. last evals)
};

struct CheckpointPaths {
  std::string current, previous;
};
CheckpointPaths checkpoint_paths(const std::string& run_dir);

// Serialises everything and replaces run_dir/checkpoint.egmc atomically,
// keeping the old one as checkpoint.prev.egmc.
void save_checkpoint(const std::string& run_dir, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     const TrainState& state, const std::string& config_hash,
                     const std::vector<torch::Device>& rng_devices);

struct LoadedCheckpoint {
  TrainState state;
  std::string path;                   // the file that was loaded
  std::vector<std::string> problems;  // files skipped, and why (corrupt, truncated, other config)
};

// Loads the newest valid checkpoint of run_dir into model/optimizer and the
// RNGs. Returns nullopt (with problems filled) when none is usable; throws
// IoError only when a checkpoint is valid but belongs to another config.
std::optional<LoadedCheckpoint> load_checkpoint(const std::string& run_dir, torch::nn::Module& model,
                                                torch::optim::Optimizer& optimizer, const std::string& config_hash,
                                                const std::vector<torch::Device>& rng_devices,
                                                std::vector<std::string>* problems = nullptr);

// Reads and verifies just the header of a checkpoint file (throws IoError).
nlohmann::json read_checkpoint_header(const std::string& path);

}  // namespace egm
