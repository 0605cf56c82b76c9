// The paired comparison of two variants on their shared seeds: the t interval
// of the per-seed differences, the paired t test and the Wilcoxon test beside it.
#include "stats/paired.h"

#include <cmath>
#include <limits>

#include "stats/distributions.h"
#include "util/error.h"

namespace egm::stats {

PairedResult paired_compare_differences(const std::vector<double>& differences, double level) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  PairedResult r;
  r.differences = differences;
  r.difference = summarize(differences, level);
  // Beside the t test: the signed-rank test does not assume normal differences, only symmetric ones.
  r.wilcoxon = wilcoxon_signed_rank(differences);
  // One shared seed: a mean difference but no spread, so no t statistic.
  if (r.difference.n < 2) {
    r.t_stat = r.df = r.p_t = nan;
    return r;
  }
  r.df = static_cast<double>(r.difference.n - 1);
  if (r.difference.se > 0.0) {
    r.t_stat = r.difference.mean / r.difference.se;
    r.p_t = t_two_sided_p(r.t_stat, r.df);
  // Zero spread (all differences equal): all zero is no evidence, else t is infinite with the mean's sign.
  } else if (r.difference.mean == 0.0) {
    r.t_stat = 0.0;
    r.p_t = 1.0;
  } else {
    r.t_stat = std::copysign(std::numeric_limits<double>::infinity(), r.difference.mean);
    r.p_t = 0.0;
  }
  return r;
}

PairedResult paired_compare(const SeedValues& x, const SeedValues& y, double level) {
  KeyMatch match = match_keys(x, y);
  EGM_REQUIRE(!match.shared.empty(), ConfigError,
              "paired comparison needs seeds present in both samples; none are shared ({} vs {} seeds)",
              x.size(), y.size());
  std::vector<double> differences;
  differences.reserve(match.shared.size());
  for (std::int64_t key : match.shared) differences.push_back(x.at(key) - y.at(key));
  PairedResult r = paired_compare_differences(differences, level);
  // The seeds left out of the pairing are returned, so a caller can say what was dropped.
  r.keys = std::move(match.shared);
  r.only_in_x = std::move(match.only_in_first);
  r.only_in_y = std::move(match.only_in_second);
  return r;
}

}  // namespace egm::stats
