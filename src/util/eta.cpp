// The one ETA formula (egm status, the coordinator's view): the running cells'
// step rates when there are any, else the mean attempt time per cell left.
#include "util/eta.h"

#include <algorithm>

namespace egm {

std::optional<double> sweep_eta(const EtaInput& in) {
  if (in.cells_left <= 0) return 0.0;
  double rate = 0;
  for (double r : in.running_steps_per_s)
    if (r > 0) rate += r;  // false for NaN too
  if (rate > 0) return std::max(0.0, in.steps_left) / rate;
  if (in.mean_attempt_s && *in.mean_attempt_s > 0)
    return *in.mean_attempt_s * static_cast<double>(in.cells_left) /
           static_cast<double>(std::max<int64_t>(1, in.running));
  return std::nullopt;
}

}  // namespace egm
