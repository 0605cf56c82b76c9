// Choosing the number of clusters k in [1, kmax], to test claims such as "the
// learned MoPE scales cluster into four groups". Three scores per k:
//  - silhouette (k >= 2): mean of (b - a) / max(a, b) with Euclidean
//    distances; cannot say "one cluster", so it never picks k = 1 alone;
//  - gap statistic (Tibshirani, Walther & Hastie 2001): log W_k of reference
//    data drawn uniformly in the box aligned with the data's principal axes
//    (their variant b), minus log W_k of the data; it can choose 1 (see
//    GapRule for how k is read off the curve);
//  - BIC of a spherical Gaussian mixture with hard assignments and one shared
//    variance (lower is better), which can also be 1.
// Coordinates are used as given: put them on comparable scales first (for
// MoPE pairs, (log omega, log sigma)).
#pragma once

#include <cstddef>
#include <vector>

#include "stats/kmeans.h"

namespace egm::stats {

enum class KCriterion {
  gap,         // the gap statistic's choice (default)
  bic,         // lowest BIC
  silhouette,  // highest silhouette over k >= 2, but 1 when the gap statistic picks 1
};
const char* k_criterion_name(KCriterion criterion);

// How the gap statistic's k is read off the Gap(k) curve (s_k its standard error).
enum class GapRule {
  // First local maximum k* (first k with Gap(k+1) <= Gap(k), else kmax), then
  // the smallest k <= k* with Gap(k) >= Gap(k*) - s_{k*}. The default of R's
  // cluster::clusGap; robust when the curve dips before its peak, as with
  // four evenly spaced scales, where the rule below stops at k = 1.
  first_se_max,
  // Tibshirani et al.'s original: smallest k with Gap(k) >= Gap(k+1) - s_{k+1}.
  tibshirani_2001,
};

// Where the gap statistic's reference log W_k comes from.
enum class GapReference {
  // B sets drawn in a box of the data's shape, shared by every data set of
  // the same number of points (and options) in the process: in one dimension
  // exactly the per-call value up to rounding (k-means is scale-equivariant),
  // in two read off a table over the box's aspect ratio (33 shapes) by linear
  // interpolation; more dimensions draw per call. The default: thousands of
  // runs' pairs cost a few tables instead of B x kmax fits each.
  shared,
  // B sets drawn in this data's own box on every call.
  per_call,
};

struct KSelectOptions {
  std::size_t kmax = 8;
  KMeansOptions kmeans;              // its seed also drives the gap reference draws
  std::size_t gap_references = 20;   // B reference data sets
  GapReference gap_reference = GapReference::shared;
  GapRule gap_rule = GapRule::first_se_max;
  KCriterion criterion = KCriterion::gap;
};

struct KScore {
  std::size_t k = 0;
  double within_ss = 0.0;
  double silhouette = 0.0;  // NaN for k = 1
  double gap = 0.0;         // Gap(k)
  double gap_se = 0.0;      // s_k = sd_k * sqrt(1 + 1/B)
  double bic = 0.0;
};

struct KSelection {
  std::size_t chosen_k = 0;
  KCriterion criterion = KCriterion::gap;
  std::size_t gap_k = 0;
  std::size_t bic_k = 0;
  std::size_t silhouette_k = 0;  // 0 when kmax < 2
  std::size_t kmax_used = 0;     // kmax clipped to the number of distinct points
  std::vector<KScore> scores;    // k = 1 .. kmax_used
  std::vector<KMeansFit> fits;   // k = 1 .. kmax_used
  const KMeansFit& chosen() const { return fits.at(chosen_k - 1); }
};

// Throws ConfigError for kmax = 0, gap_references < 2, or invalid points.
KSelection select_k(const Points& points, const KSelectOptions& options = {});

// Mean silhouette width of a partition into k clusters (NaN for k < 2);
// points alone in their cluster count 0.
double silhouette(const Points& points, const std::vector<std::size_t>& assignments, std::size_t k);

// BIC = -2 log L + p ln n with log L = sum_j n_j ln(n_j / n)
//   - (n d / 2) ln(2 pi sigma^2) - n d / 2, sigma^2 = W / (n d),
// p = (k - 1) + k d + 1 (weights, centres, one variance). -inf if W = 0.
double kmeans_bic(std::size_t n, std::size_t dim, const KMeansFit& fit);

}  // namespace egm::stats
