// Choosing k: silhouette, BIC, and the gap statistic against uniform reference
// sets in the data's principal-axes box, with the rule that picks k from each.
#include "stats/kmeans_select.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "stats/kmeans_internal.h"
#include "stats/rng.h"
#include "util/error.h"

namespace egm::stats {

const char* k_criterion_name(KCriterion criterion) {
  switch (criterion) {
    case KCriterion::gap: return "gap statistic";
    case KCriterion::bic: return "BIC";
    case KCriterion::silhouette: return "silhouette (k = 1 when the gap statistic says so)";
  }
  return "?";
}

namespace {

// The mean silhouette width; distance(i, j) is the Euclidean distance of
// points i and j. select_k passes a matrix computed once for every k, the
// public function computes each as it goes: the same values summed in the
// same order, so the same result to the bit.
template <class Distance>
double silhouette_with(std::size_t n, const std::vector<std::size_t>& assignments, std::size_t k,
                       const Distance& distance) {
  std::vector<std::size_t> sizes(k, 0);
  for (std::size_t a : assignments) {
    EGM_REQUIRE(a < k, ConfigError, "assignment {} out of range for k = {}", a, k);
    ++sizes[a];
  }
  double total = 0.0;
  std::vector<double> sum_to(k);
  for (std::size_t i = 0; i < n; ++i) {
    // Rousseeuw's convention: a point alone in its cluster has s(i) = 0, so it only counts in the divisor.
    if (sizes[assignments[i]] < 2) continue;  // singleton: s(i) = 0
    std::fill(sum_to.begin(), sum_to.end(), 0.0);
    for (std::size_t j = 0; j < n; ++j) {
      if (j != i) sum_to[assignments[j]] += distance(i, j);
    }
    // a: mean distance to the rest of its own cluster; b: to the nearest other cluster.
    double a = sum_to[assignments[i]] / static_cast<double>(sizes[assignments[i]] - 1);
    double b = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < k; ++c) {
      if (c != assignments[i] && sizes[c] > 0) b = std::min(b, sum_to[c] / static_cast<double>(sizes[c]));
    }
    double denom = std::max(a, b);
    // b is infinite when every other cluster is empty; denom is 0 when points coincide: both add s(i) = 0.
    if (std::isfinite(b) && denom > 0.0) total += (b - a) / denom;
  }
  return total / static_cast<double>(n);
}

}  // namespace

double silhouette(const Points& points, const std::vector<std::size_t>& assignments, std::size_t k) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  detail::FlatPoints p = detail::flatten(points);
  EGM_REQUIRE(assignments.size() == p.n, ConfigError, "{} assignments for {} points", assignments.size(), p.n);
  // With one cluster there is no other cluster for b: the silhouette is undefined, not 0.
  if (k < 2) return nan;
  return silhouette_with(p.n, assignments, k, [&p](std::size_t i, std::size_t j) {
    return std::sqrt(detail::squared_distance(p.row(i), p.row(j), p.dim));
  });
}

double kmeans_bic(std::size_t n, std::size_t dim, const KMeansFit& fit) {
  // W = 0 (every point on its centre): the Gaussian likelihood is unbounded, so BIC is -inf.
  if (fit.within_ss <= 0.0) return -std::numeric_limits<double>::infinity();
  const double nd = static_cast<double>(n * dim);
  const double variance = fit.within_ss / nd;
  constexpr double two_pi = 6.283185307179586476925;
  double log_l = -nd / 2.0 * std::log(two_pi * variance) - nd / 2.0;
  for (std::size_t size : fit.sizes) {
    // The mixing weights' term, sum n_c log(n_c / n); empty clusters add nothing.
    if (size > 0) log_l += static_cast<double>(size) * std::log(static_cast<double>(size) / static_cast<double>(n));
  }
  double params = static_cast<double>((fit.k - 1) + fit.k * dim + 1);
  return -2.0 * log_l + params * std::log(static_cast<double>(n));
}

namespace {

// Rows sorted by index (lexicographic order of their coordinates, as
// std::vector<double> compares), then counted: no copy of each row.
std::size_t count_distinct(const detail::FlatPoints& p) {
  std::vector<std::size_t> order(p.n);
  for (std::size_t i = 0; i < p.n; ++i) order[i] = i;
  auto less = [&](std::size_t a, std::size_t b) {
    return std::lexicographical_compare(p.row(a), p.row(a) + p.dim, p.row(b), p.row(b) + p.dim);
  };
  std::sort(order.begin(), order.end(), less);
  std::size_t distinct = p.n == 0 ? 0 : 1;
  for (std::size_t i = 1; i < p.n; ++i)
    if (!std::equal(p.row(order[i - 1]), p.row(order[i - 1]) + p.dim, p.row(order[i]))) ++distinct;
  return distinct;
}

// Eigenvectors (columns of the returned row-major dim x dim matrix) of a
// symmetric matrix by cyclic Jacobi rotations; dim is small here.
std::vector<double> principal_axes(std::vector<double> a, std::size_t dim) {
  std::vector<double> v(dim * dim, 0.0);
  for (std::size_t i = 0; i < dim; ++i) v[i * dim + i] = 1.0;
  auto at = [dim](std::vector<double>& m, std::size_t r, std::size_t c) -> double& { return m[r * dim + c]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0, diag = 0.0;
    for (std::size_t r = 0; r < dim; ++r) {
      for (std::size_t c = 0; c < dim; ++c) (r == c ? diag : off) += at(a, r, c) * at(a, r, c);
    }
    // Converged once the off-diagonal mass is negligible next to the diagonal.
    if (off <= 1e-30 * diag || off == 0.0) break;
    for (std::size_t p = 0; p < dim; ++p) {
      for (std::size_t q = p + 1; q < dim; ++q) {
        if (at(a, p, q) == 0.0) continue;
        // Rotation J (c at pp, qq; s at pq; -s at qp) with J^T A J zeroing a_pq.
        double theta = (at(a, q, q) - at(a, p, p)) / (2.0 * at(a, p, q));
        // The smaller root of t^2 + 2 theta t - 1 = 0: the rotation angle stays within pi/4, which is stable.
        double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        double c = 1.0 / std::sqrt(t * t + 1.0);
        double s = t * c;
        for (std::size_t k = 0; k < dim; ++k) {
          double akp = at(a, k, p), akq = at(a, k, q);
          at(a, k, p) = c * akp - s * akq;
          at(a, k, q) = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < dim; ++k) {
          double apk = at(a, p, k), aqk = at(a, q, k);
          at(a, p, k) = c * apk - s * aqk;
          at(a, q, k) = s * apk + c * aqk;
        }
        for (std::size_t k = 0; k < dim; ++k) {
          double vkp = at(v, k, p), vkq = at(v, k, q);
          at(v, k, p) = c * vkp - s * vkq;
          at(v, k, q) = s * vkp + c * vkq;
        }
      }
    }
  }
  return v;
}

// The data's bounding box in principal-axis coordinates: [lo_j, hi_j] for
// each axis. A uniform draw there, clustered, gives the reference W_k
// (distances are rotation invariant, so no need to rotate back).
struct Box {
  std::vector<double> lo, hi;
  std::vector<double> length() const {
    std::vector<double> out(lo.size());
    for (std::size_t j = 0; j < lo.size(); ++j) out[j] = hi[j] - lo[j];
    return out;
  }
};
Box principal_box(const detail::FlatPoints& p) {
  const std::size_t d = p.dim;
  std::vector<double> mean(d, 0.0);
  for (std::size_t i = 0; i < p.n; ++i) {
    for (std::size_t j = 0; j < d; ++j) mean[j] += p.row(i)[j] / static_cast<double>(p.n);
  }
  std::vector<double> cov(d * d, 0.0);
  for (std::size_t i = 0; i < p.n; ++i) {
    for (std::size_t r = 0; r < d; ++r) {
      for (std::size_t c = 0; c < d; ++c) cov[r * d + c] += (p.row(i)[r] - mean[r]) * (p.row(i)[c] - mean[c]);
    }
  }
  // The covariance is not divided by n: only its eigenvectors are used, and scaling does not move them.
  std::vector<double> axes = principal_axes(cov, d);
  Box box;
  box.lo.assign(d, std::numeric_limits<double>::infinity());
  box.hi.assign(d, -std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < p.n; ++i) {
    for (std::size_t axis = 0; axis < d; ++axis) {
      double proj = 0.0;
      // The centred point's coordinate along eigenvector `axis` (column `axis` of axes).
      for (std::size_t j = 0; j < d; ++j) proj += (p.row(i)[j] - mean[j]) * axes[j * d + axis];
      box.lo[axis] = std::min(box.lo[axis], proj);
      box.hi[axis] = std::max(box.hi[axis], proj);
    }
  }
  return box;
}

// Mean and SD (1/B, as in the paper) of log W_k, k = 1 .. kmax, over B
// reference sets drawn uniformly in the box [lo_j, lo_j + length_j].
struct ReferenceLogW {
  std::vector<double> mean, sd;
};
ReferenceLogW draw_reference(std::size_t n, const std::vector<double>& lo, const std::vector<double>& length,
                             std::size_t kmax, std::size_t refs, const KMeansOptions& km) {
  const std::size_t dim = lo.size();
  std::vector<std::vector<double>> log_w(kmax, std::vector<double>(refs));
  // The golden-ratio constant: a stream apart from the data's own fits, still fixed by the seed.
  std::mt19937_64 ref_rng(km.seed ^ 0x9E3779B97F4A7C15ULL);  // a stream apart from the data fits
  detail::FlatPoints ref;
  ref.n = n;
  ref.dim = dim;
  ref.x.resize(n * dim);
  for (std::size_t b = 0; b < refs; ++b) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < dim; ++j) ref.x[i * dim + j] = lo[j] + uniform01(ref_rng) * length[j];
    }
    for (std::size_t k = 1; k <= kmax; ++k) {
      // One stream drives the draws and the fits in turn, so a table at any scale sees the same numbers.
      log_w[k - 1][b] = std::log(detail::kmeans_flat(ref, k, km.restarts, km.max_iterations, ref_rng).within_ss);
    }
  }
  ReferenceLogW out;
  for (std::size_t k = 1; k <= kmax; ++k) {
    const std::vector<double>& lw = log_w[k - 1];
    double mean = 0.0;
    for (double v : lw) mean += v / static_cast<double>(refs);
    double var = 0.0;
    for (double v : lw) var += (v - mean) * (v - mean) / static_cast<double>(refs);  // 1/B as in the paper
    out.mean.push_back(mean);
    out.sd.push_back(std::sqrt(var));
  }
  return out;
}

// The shared reference (GapReference::shared). k-means is equivariant under
// a common scaling of every coordinate (k-means++ draws in proportion to
// squared distances, Lloyd moves to means) and draws the same random numbers
// whatever the scale, so with the same stream a box of sides (L, rL) gives
// log W_k = 2 log L + log W_k of the box (1, r). In one dimension that is
// exact: every data set of n points shares one table, computed once. In two,
// log W_k of the box (1, r) (or (r, 1), whichever axis of the data's box is
// the longest) is tabulated at r = 0, 1/32, .., 1 with the same stream at
// every r, and read between grid points by linear interpolation: the per-call
// value up to that interpolation (tests/stats/test_kmeans.cpp bounds it).
// Tables live for the process, keyed by everything they depend on; more
// dimensions draw per call.
constexpr std::size_t kShapeGrid = 32;

const ReferenceLogW& reference_table(std::size_t n, std::size_t dim, std::size_t grid_index, std::size_t kmax,
                                     std::size_t refs, const KMeansOptions& km) {
  using Key = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
                         std::uint64_t>;
  static std::mutex mutex;
  static std::map<Key, ReferenceLogW> tables;
  const Key key{n, dim, grid_index, kmax, refs, km.restarts, km.max_iterations, km.seed};
  // The lock is held while a missing table is drawn, so two threads never compute the same one.
  std::lock_guard<std::mutex> lock(mutex);  // std::map keeps references valid across inserts
  auto it = tables.find(key);
  if (it != tables.end()) return it->second;
  std::vector<double> length(dim, 1.0);
  if (dim == 2)  // grid_index r * 32 with the first side the longest, 33 + r * 32 with the second
    length[grid_index <= kShapeGrid ? 1 : 0] = static_cast<double>(grid_index % (kShapeGrid + 1)) /
                                               static_cast<double>(kShapeGrid);
  return tables.emplace(key, draw_reference(n, std::vector<double>(dim, 0.0), length, kmax, refs, km)).first->second;
}

ReferenceLogW shared_reference(std::size_t n, const Box& box, std::size_t kmax, std::size_t refs,
                               const KMeansOptions& km) {
  std::vector<double> length = box.length();
  const double longest = length.empty() ? 0.0 : *std::max_element(length.begin(), length.end());
  // Past two dimensions there is no table; a degenerate box (all points equal, or inf) draws directly.
  if (length.size() > 2 || !(longest > 0.0) || !std::isfinite(longest))
    return draw_reference(n, box.lo, length, kmax, refs, km);
  // log W_k scales as 2 log L with the box's longest side L (the comment above reference_table).
  const double shift = 2.0 * std::log(longest);
  if (length.size() == 1) {
    ReferenceLogW out = reference_table(n, 1, 0, kmax, refs, km);
    for (double& m : out.mean) m += shift;
    return out;
  }
  const double r = std::min(length[0], length[1]) / longest;
  const double at = r * static_cast<double>(kShapeGrid);
  // r = 1 lands on the last interval with w = 1, so i + 1 never runs past the grid.
  const std::size_t i = std::min(static_cast<std::size_t>(at), kShapeGrid - 1);
  const double w = at - static_cast<double>(i);
  const std::size_t orientation = length[0] >= length[1] ? 0 : kShapeGrid + 1;
  const ReferenceLogW& lower = reference_table(n, 2, orientation + i, kmax, refs, km);
  ReferenceLogW out = lower;
  if (w > 0.0) {
    const ReferenceLogW& upper = reference_table(n, 2, orientation + i + 1, kmax, refs, km);
    for (std::size_t k = 0; k < kmax; ++k) {
      out.mean[k] = (1.0 - w) * lower.mean[k] + w * upper.mean[k];
      out.sd[k] = (1.0 - w) * lower.sd[k] + w * upper.sd[k];
    }
  }
  for (double& m : out.mean) m += shift;
  return out;
}

// scores[k - 1] holds k = 1 .. kmax.
std::size_t gap_choice(const std::vector<KScore>& scores, GapRule rule) {
  const std::size_t kmax = scores.size();
  auto gap = [&](std::size_t k) { return scores[k - 1].gap; };
  auto se = [&](std::size_t k) { return scores[k - 1].gap_se; };
  if (rule == GapRule::tibshirani_2001) {
    for (std::size_t k = 1; k < kmax; ++k) {
      // Tibshirani et al. 2001: the smallest k whose gap is within one SE of the next.
      if (gap(k) >= gap(k + 1) - se(k + 1)) return k;
    }
    return kmax;
  }
  // first_se_max (clusGap's default, the header): the first local maximum, then the smallest k within its SE.
  std::size_t peak = kmax;
  for (std::size_t k = 1; k < kmax; ++k) {
    if (gap(k + 1) <= gap(k)) {
      peak = k;
      break;
    }
  }
  for (std::size_t k = 1; k < peak; ++k) {
    if (gap(k) >= gap(peak) - se(peak)) return k;
  }
  return peak;
}

std::size_t argmin_bic(const std::vector<KScore>& scores) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < scores.size(); ++i) {
    if (scores[i].bic < scores[best].bic) best = i;
  }
  return scores[best].k;
}

}  // namespace

KSelection select_k(const Points& points, const KSelectOptions& options) {
  EGM_REQUIRE(options.kmax >= 1, ConfigError, "kmax must be at least 1");
  EGM_REQUIRE(options.gap_references >= 2, ConfigError, "the gap statistic needs at least 2 reference sets");
  detail::FlatPoints p = detail::flatten(points);
  const KMeansOptions& km = options.kmeans;

  KSelection sel;
  sel.criterion = options.criterion;
  // More clusters than distinct points would only split duplicates.
  sel.kmax_used = std::min(options.kmax, count_distinct(p));
  const std::size_t kmax = sel.kmax_used;

  // Distances between points once for every k's silhouette (not for very
  // many points, where the matrix would be large).
  constexpr std::size_t kMatrixMaxPoints = 2048;
  std::vector<double> distances;
  if (p.n <= kMatrixMaxPoints) {
    // Symmetric to the bit ((a - b)^2 = (b - a)^2, summed in the same order): each pair once.
    distances.resize(p.n * p.n);
    for (std::size_t i = 0; i < p.n; ++i) {
      distances[i * p.n + i] = 0.0;
      for (std::size_t j = i + 1; j < p.n; ++j)
        distances[i * p.n + j] = distances[j * p.n + i] =
            std::sqrt(detail::squared_distance(p.row(i), p.row(j), p.dim));
    }
  }
  // One stream for k = 1 .. kmax in order: each k's fit depends on the fits before it.
  std::mt19937_64 rng(km.seed);
  for (std::size_t k = 1; k <= kmax; ++k) {
    sel.fits.push_back(detail::kmeans_flat(p, k, km.restarts, km.max_iterations, rng));
    KScore s;
    s.k = k;
    s.within_ss = sel.fits.back().within_ss;
    if (k < 2)
      s.silhouette = std::numeric_limits<double>::quiet_NaN();
    else if (!distances.empty())
      s.silhouette = silhouette_with(p.n, sel.fits.back().assignments, k, [&](std::size_t i, std::size_t j) {
        return distances[i * p.n + j];
      });
    else
      s.silhouette = silhouette(points, sel.fits.back().assignments, k);
    s.bic = kmeans_bic(p.n, p.dim, sel.fits.back());
    sel.scores.push_back(s);
  }

  // Gap statistic: B uniform reference sets in the principal-axis box.
  const std::size_t refs = options.gap_references;
  const Box box = principal_box(p);
  const ReferenceLogW ref = options.gap_reference == GapReference::shared
                                ? shared_reference(p.n, box, kmax, refs, km)
                                : draw_reference(p.n, box.lo, box.length(), kmax, refs, km);
  for (std::size_t k = 1; k <= kmax; ++k) {
    KScore& s = sel.scores[k - 1];
    s.gap = ref.mean[k - 1] - std::log(s.within_ss);
    // s_k = sd_k sqrt(1 + 1/B): the reference mean's own error added (Tibshirani et al. 2001).
    s.gap_se = ref.sd[k - 1] * std::sqrt(1.0 + 1.0 / static_cast<double>(refs));
  }

  sel.gap_k = gap_choice(sel.scores, options.gap_rule);
  sel.bic_k = argmin_bic(sel.scores);
  sel.silhouette_k = 0;
  for (std::size_t k = 2; k <= kmax; ++k) {
    if (sel.silhouette_k == 0 || sel.scores[k - 1].silhouette > sel.scores[sel.silhouette_k - 1].silhouette) {
      sel.silhouette_k = k;
    }
  }

  switch (options.criterion) {
    case KCriterion::gap: sel.chosen_k = sel.gap_k; break;
    case KCriterion::bic: sel.chosen_k = sel.bic_k; break;
    case KCriterion::silhouette:
      // The silhouette cannot say k = 1 (it needs two clusters), so the gap statistic decides that case.
      sel.chosen_k = (sel.gap_k == 1 || sel.silhouette_k == 0) ? 1 : sel.silhouette_k;
      break;
  }
  return sel;
}

}  // namespace egm::stats
