// Paired comparison of two variants run on the same seeds: per-seed
// differences remove the seed-to-seed noise the two runs share (same data
// order, same init draw), so a paired interval is usually much tighter than a
// two-sample one. Includes the paired t test and the Wilcoxon signed-rank test.
#pragma once

#include <cstdint>
#include <vector>

#include "stats/descriptive.h"
#include "stats/seed_values.h"
#include "stats/wilcoxon.h"

namespace egm::stats {

struct PairedResult {
  std::vector<std::int64_t> keys;          // shared seeds, ascending
  std::vector<double> differences;         // x[key] - y[key], in key order
  std::vector<std::int64_t> only_in_x;     // seeds without a partner: not used
  std::vector<std::int64_t> only_in_y;
  Summary difference;                      // mean difference with its t interval
  // Paired t test of mean difference = 0 (df = n - 1). NaN when n < 2. When
  // all differences are equal (sd = 0): t = +-inf and p = 0, or t = 0 and
  // p = 1 if they are all zero.
  double t_stat = 0.0;
  double df = 0.0;
  double p_t = 0.0;
  WilcoxonResult wilcoxon;
};

// Matches x and y by key and compares x - y. Throws ConfigError when no key
// is shared. For losses, x = variant and y = base gives negative differences
// when the variant is better.
PairedResult paired_compare(const SeedValues& x, const SeedValues& y, double level = 0.95);

// The same on differences already formed (keys empty).
PairedResult paired_compare_differences(const std::vector<double>& differences, double level = 0.95);

}  // namespace egm::stats
