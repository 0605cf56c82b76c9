// Holm-Bonferroni step-down adjustment for a family of tests (e.g. every
// variant against base). Controls the family-wise error rate like Bonferroni
// but rejects at least as much.
#pragma once

#include <vector>

namespace egm::stats {

// Adjusted p-values in the order given. With raw p sorted ascending
// p_(1) <= ... <= p_(m): adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)),
// so they are monotone in the raw p and capped at 1. Reject H_i at level
// alpha iff adj_i <= alpha. Throws ConfigError for a p outside [0, 1] or NaN.
std::vector<double> holm_adjust(const std::vector<double>& p_values);

}  // namespace egm::stats
