// The one ETA formula (egm status, the coordinator's view): the running cells'
// step rates when there are any, else the mean attempt time per cell left.
#include "util/eta.h"

#include <algorithm>

namespace egm {

std::optional<double> sweep_eta(const EtaInput& in) {
  // Nothing left: zero, not unknown.
  if (in.cells_left <= 0) return 0.0;
  double rate = 0;
  for (double r : in.running_steps_per_s)
    if (r > 0) rate += r;  // false for NaN too
  // The running cells' summed rate: the remaining steps are shared among them as they free up.
  if (rate > 0) return std::max(0.0, in.steps_left) / rate;
  // No rate yet (all cells just started): the mean attempt's time, the cells left run `running` at a time.
  if (in.mean_attempt_s && *in.mean_attempt_s > 0)
    return *in.mean_attempt_s * static_cast<double>(in.cells_left) /
           static_cast<double>(std::max<int64_t>(1, in.running));
  // Neither a rate nor a finished attempt: nothing to estimate from.
  return std::nullopt;
}

}  // namespace egm
