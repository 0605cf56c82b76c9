// The one ETA formula of a sweep, shared by `egm status` (from the database),
// the coordinator's live view (from its own bookkeeping) and `egm serve`.
//
//   nothing left to run                 -> 0
//   some running cell has a step rate   -> steps_left / (sum of the known rates)
//   else a mean finished-attempt time   -> mean * cells_left / max(1, running)
//   else                                -> unknown (nullopt)
//
// steps_left counts every step still to run: the rest of each running cell
// plus the whole of each queued one (cells out of retries are not counted).
// The rates are summed because the running cells train side by side; a cell
// that has not reported two train steps yet contributes no rate.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace egm {

struct EtaInput {
  double steps_left = 0;                    // the rest of the running cells + the queued cells
  std::vector<double> running_steps_per_s;  // one per running cell; <= 0 or NaN: not known yet
  int64_t cells_left = 0;                   // cells still to run: running + queued
  int64_t running = 0;                      // cells running now (the fallback's parallelism)
  std::optional<double> mean_attempt_s;     // mean wall time of the sweep's done attempts, when known
};

// Seconds until the cells still to run are done; nullopt when nothing says.
std::optional<double> sweep_eta(const EtaInput& input);

}  // namespace egm
