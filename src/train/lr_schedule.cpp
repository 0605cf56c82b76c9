// The learning rate at a step: linear warm-up, then cosine decay to min_lr.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace egm {

double learning_rate(const TrainConfig& t, int64_t step) {
  // Step 0 trains with lr 0; warmup_steps 0 skips this branch, so there is no division by zero.
  if (step < t.warmup_steps) return t.lr * static_cast<double>(step) / static_cast<double>(t.warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(1, t.max_steps - t.warmup_steps);
  // Clamped at 1: a run extended past max_steps stays at min_lr.
  const double progress = std::min(1.0, static_cast<double>(step - t.warmup_steps) / static_cast<double>(decay_steps));
  return t.min_lr + 0.5 * (t.lr - t.min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace egm
