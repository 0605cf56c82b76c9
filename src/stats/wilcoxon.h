// Wilcoxon signed-rank test on paired differences: a check on the paired t
// test that does not assume normal differences (a diverging seed is an
// outlier that t handles badly).
//
// Zero differences are DROPPED before ranking (Wilcoxon's original method,
// the default of R's wilcox.test), not kept with rank mass as in Pratt's
// variant. |d| are ranked with average ranks for ties (exact equality; round
// the inputs first if near-equal values should count as tied).
#pragma once

#include <cstddef>
#include <vector>

namespace egm::stats {

enum class WilcoxonMethod {
  exact,          // null distribution enumerated: no ties, no zeros, n <= exact_max_n
  normal_approx,  // normal approximation with tie and continuity corrections
  none,           // no nonzero differences: no test
};
const char* wilcoxon_method_name(WilcoxonMethod method);

struct WilcoxonResult {
  double v = 0.0;            // W+ (R's V): sum of the ranks of the positive differences
  std::size_t n_used = 0;    // nonzero differences that were ranked
  std::size_t n_zeros = 0;   // zero differences dropped
  bool has_ties = false;     // some |d| tied (average ranks were used)
  double z = 0.0;            // normal_approx only (continuity-corrected); NaN otherwise
  double p = 0.0;            // two-sided; NaN for method none
  WilcoxonMethod method = WilcoxonMethod::none;
};

// Two-sided test of "differences symmetric about 0". Exact p is
// min(1, 2 * min(P(V <= v), P(V >= v))) under the null where each rank's sign
// is a fair coin. Throws ConfigError on non-finite input.
WilcoxonResult wilcoxon_signed_rank(const std::vector<double>& differences,
                                    std::size_t exact_max_n = 25);

// Number of subsets of {1, ..., n} with each rank sum 0 .. n(n+1)/2: the exact
// null distribution of V times 2^n. Exposed for tests.
std::vector<double> signed_rank_null_counts(std::size_t n);

}  // namespace egm::stats
