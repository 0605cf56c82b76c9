// The Wilcoxon signed-rank test: zeros dropped, average ranks for ties, the exact
// null distribution up to exact_max_n, else the tie- and continuity-corrected normal.
#include "stats/wilcoxon.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "stats/descriptive.h"
#include "stats/distributions.h"
#include "util/error.h"

namespace egm::stats {

const char* wilcoxon_method_name(WilcoxonMethod method) {
  switch (method) {
    case WilcoxonMethod::exact: return "exact";
    case WilcoxonMethod::normal_approx: return "normal approximation (tie + continuity corrected)";
    case WilcoxonMethod::none: return "none (no nonzero differences)";
  }
  return "?";
}

std::vector<double> signed_rank_null_counts(std::size_t n) {
  // counts[s] after adding rank r = subsets of {1..r} summing to s. Counts
  // stay exact in double up to 2^53, far beyond the n we enumerate.
  std::size_t max_sum = n * (n + 1) / 2;
  std::vector<double> counts(max_sum + 1, 0.0);
  counts[0] = 1.0;
  for (std::size_t r = 1; r <= n; ++r) {
    std::size_t top = r * (r + 1) / 2;
    for (std::size_t s = top; s >= r; --s) counts[s] += counts[s - r];
  }
  return counts;
}

WilcoxonResult wilcoxon_signed_rank(const std::vector<double>& differences, std::size_t exact_max_n) {
  require_finite(differences, "differences");
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  WilcoxonResult r;
  r.z = nan;
  r.p = nan;

  std::vector<double> nonzero;
  for (double d : differences) {
    // Zeros carry no sign: dropped and counted (Wilcoxon's convention, R's default).
    if (d == 0.0) {
      ++r.n_zeros;
    } else {
      nonzero.push_back(d);
    }
  }
  r.n_used = nonzero.size();
  if (r.n_used == 0) return r;  // method none

  // Average ranks of |d|; tie_term accumulates sum(t^3 - t) over tie groups.
  std::vector<std::size_t> order(r.n_used);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return std::fabs(nonzero[a]) < std::fabs(nonzero[b]); });
  std::vector<double> rank(r.n_used);
  double tie_term = 0.0;
  for (std::size_t i = 0; i < r.n_used;) {
    std::size_t j = i;
    while (j + 1 < r.n_used && std::fabs(nonzero[order[j + 1]]) == std::fabs(nonzero[order[i]])) ++j;
    double average = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2.0;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = average;
    double t = static_cast<double>(j - i + 1);
    if (t > 1) r.has_ties = true;
    tie_term += t * t * t - t;
    i = j + 1;
  }
  for (std::size_t i = 0; i < r.n_used; ++i) {
    // V: the sum of the ranks of the positive differences.
    if (nonzero[i] > 0) r.v += rank[i];
  }

  const double n = static_cast<double>(r.n_used);
  // The exact null assumes ranks 1..n with no ties or zeros; otherwise the normal approximation below.
  if (!r.has_ties && r.n_zeros == 0 && r.n_used <= exact_max_n) {
    std::vector<double> counts = signed_rank_null_counts(r.n_used);
    // 2^n sign patterns, equally likely under the null of symmetry about 0.
    double total = std::ldexp(1.0, static_cast<int>(r.n_used));
    // Without ties V is a whole number.
    std::size_t v = static_cast<std::size_t>(std::llround(r.v));
    double lower = 0.0;  // count of V <= v
    for (std::size_t s = 0; s <= v; ++s) lower += counts[s];
    double upper = 0.0;  // count of V >= v
    for (std::size_t s = v; s < counts.size(); ++s) upper += counts[s];
    // Two-sided: twice the smaller tail, capped at 1 (both tails count v itself).
    r.p = std::min(1.0, 2.0 * std::min(lower, upper) / total);
    r.method = WilcoxonMethod::exact;
    return r;
  }

  double mean = n * (n + 1) / 4.0;
  // The null variance of V, less sum(t^3 - t) / 48 for tied ranks.
  double var = n * (n + 1) * (2 * n + 1) / 24.0 - tie_term / 48.0;
  double diff = r.v - mean;
  // Continuity correction of half a unit towards the mean (V moves in steps
  // of 1, or 0.5 with ties; R uses 0.5 in both cases).
  double correction = diff > 0 ? 0.5 : (diff < 0 ? -0.5 : 0.0);
  r.z = (diff - correction) / std::sqrt(var);
  r.p = normal_two_sided_p(r.z);
  r.method = WilcoxonMethod::normal_approx;
  return r;
}

}  // namespace egm::stats
