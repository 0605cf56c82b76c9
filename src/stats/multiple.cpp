// Holm's step-down adjustment: sort the p-values, scale the i-th smallest by
// (m - i), keep the running maximum, and return them in the order given.
#include "stats/multiple.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

#include "util/error.h"

namespace egm::stats {

std::vector<double> holm_adjust(const std::vector<double>& p_values) {
  const std::size_t m = p_values.size();
  for (std::size_t i = 0; i < m; ++i) {
    // NaN fails both comparisons, so it is refused here too rather than sorting unpredictably.
    EGM_REQUIRE(p_values[i] >= 0.0 && p_values[i] <= 1.0, ConfigError,
                "p-value {} is {}; p-values must lie in [0, 1]", i, p_values[i]);
  }
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  // Stable: tied p-values keep their input order (their adjusted values agree anyway).
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(m);
  double running_max = 0.0;
  for (std::size_t rank = 0; rank < m; ++rank) {
    double scaled = std::min(1.0, static_cast<double>(m - rank) * p_values[order[rank]]);
    // The running maximum keeps the adjusted values in the raw p-values' order (the step-down).
    running_max = std::max(running_max, scaled);
    adjusted[order[rank]] = running_max;
  }
  return adjusted;
}

}  // namespace egm::stats
