// The paper's schedule: linear warm-up from 0 to the peak over warmup_steps,
// then cosine decay to min_lr at max_steps.
#pragma once

#include <cstdint>

#include "config/run_config.h"

namespace egm {

// Learning rate for the optimiser step that takes the model from `step` to step+1.
double learning_rate(const TrainConfig& train, int64_t step);

}  // namespace egm
