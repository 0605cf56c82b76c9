// k-means++ seeding, Lloyd iterations and restarts over flat point arrays; the
// best within-cluster sum of squares wins (same seed, same fit).
#include "stats/kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "stats/kmeans_internal.h"
#include "stats/rng.h"
#include "util/error.h"

namespace egm::stats {

Points points_1d(const std::vector<double>& values) {
  Points out;
  out.reserve(values.size());
  for (double v : values) out.push_back({v});
  return out;
}

Points points_2d(const std::vector<std::array<double, 2>>& pairs) {
  Points out;
  out.reserve(pairs.size());
  for (const auto& p : pairs) out.push_back({p[0], p[1]});
  return out;
}

namespace detail {

double squared_distance(const double* a, const double* b, std::size_t dim) {
  double s = 0.0;
  for (std::size_t j = 0; j < dim; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return s;
}

FlatPoints flatten(const Points& points) {
  EGM_REQUIRE(!points.empty(), ConfigError, "k-means needs at least one point");
  FlatPoints f;
  f.n = points.size();
  f.dim = points[0].size();
  EGM_REQUIRE(f.dim > 0, ConfigError, "k-means points need at least one coordinate");
  f.x.reserve(f.n * f.dim);
  for (std::size_t i = 0; i < f.n; ++i) {
    EGM_REQUIRE(points[i].size() == f.dim, ConfigError, "point {} has {} coordinates, point 0 has {}", i,
                points[i].size(), f.dim);
    for (double v : points[i]) {
      EGM_REQUIRE(std::isfinite(v), ConfigError, "point {} has a non-finite coordinate {}", i, v);
      f.x.push_back(v);
    }
  }
  return f;
}

namespace {

// The loops below take the dimension as a template argument D for one and
// two coordinates (what the analysis clusters), so the compiler unrolls the
// distance; D = 0 reads it from the points. The same arithmetic in the same
// order either way, so the same fit to the bit.
template <std::size_t D>
inline std::size_t dim_of(const FlatPoints& p) {
  return D != 0 ? D : p.dim;
}

template <std::size_t D>
inline double sq_dist(const double* a, const double* b, std::size_t dim) {
  if constexpr (D == 0) {
    return squared_distance(a, b, dim);
  } else {
    double s = 0.0;
    for (std::size_t j = 0; j < D; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
    return s;
  }
}

struct Start {
  std::vector<double> centres;  // k * dim
  std::vector<std::size_t> assignments;
  double within_ss = 0.0;
  bool converged = false;
};

// Buffers one k-means call reuses across its restarts (no allocation per
// restart or iteration; the arithmetic is the same).
struct Workspace {
  std::vector<double> nearest;
  std::vector<std::size_t> counts;
};

// k-means++: each next centre is drawn with probability proportional to the
// squared distance to the nearest centre chosen so far.
template <std::size_t D>
void seed_centres(const FlatPoints& p, std::size_t k, std::mt19937_64& rng, std::vector<double>& centres,
                  Workspace& w) {
  const std::size_t dim = dim_of<D>(p);
  centres.clear();
  centres.reserve(k * dim);
  // The first centre is a uniform pick; every later one is weighted by squared distance.
  std::size_t first = uniform_index(rng, p.n);
  centres.insert(centres.end(), p.row(first), p.row(first) + dim);
  std::vector<double>& nearest = w.nearest;
  nearest.resize(p.n);
  for (std::size_t i = 0; i < p.n; ++i) nearest[i] = sq_dist<D>(p.row(i), p.row(first), dim);
  for (std::size_t c = 1; c < k; ++c) {
    // Inverse-CDF draw over the running nearest distances; total = 0 only when every point sits on a centre.
    double total = std::accumulate(nearest.begin(), nearest.end(), 0.0);
    std::size_t pick = 0;
    if (total > 0.0) {
      double target = uniform01(rng) * total;
      double cumulative = 0.0;
      // Rounding can leave target at or just past the final cumulative sum: the last point then.
      pick = p.n - 1;
      for (std::size_t i = 0; i < p.n; ++i) {
        cumulative += nearest[i];
        if (target < cumulative) {
          pick = i;
          break;
        }
      }
    } else {
      pick = uniform_index(rng, p.n);  // all points coincide with chosen centres
    }
    centres.insert(centres.end(), p.row(pick), p.row(pick) + dim);
    // Only the new centre can bring a point closer, so one pass keeps nearest[] current.
    for (std::size_t i = 0; i < p.n; ++i) {
      nearest[i] = std::min(nearest[i], sq_dist<D>(p.row(i), p.row(pick), dim));
    }
  }
}

// Nearest centre (lowest index on ties). Returns whether anything changed.
template <std::size_t D>
bool assign(const FlatPoints& p, const std::vector<double>& centres, std::size_t k,
            std::vector<std::size_t>& assignments) {
  const std::size_t dim = dim_of<D>(p);
  bool changed = false;
  for (std::size_t i = 0; i < p.n; ++i) {
    std::size_t best = 0;
    double best_d = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < k; ++c) {
      double d = sq_dist<D>(p.row(i), centres.data() + c * dim, dim);
      // Strict <: on a tie the lower-indexed centre keeps the point.
      if (d < best_d) {
        best_d = d;
        best = c;
      }
    }
    if (assignments[i] != best) {
      assignments[i] = best;
      changed = true;
    }
  }
  return changed;
}

// Centres := cluster means. An emptied cluster takes the point farthest from
// its centre (from a cluster with more than one point), so k stays k.
template <std::size_t D>
void update_centres(const FlatPoints& p, std::size_t k, std::vector<std::size_t>& assignments,
                    std::vector<double>& centres, Workspace& w) {
  const std::size_t dim = dim_of<D>(p);
  std::vector<std::size_t>& counts = w.counts;
  counts.assign(k, 0);
  for (std::size_t a : assignments) ++counts[a];
  for (std::size_t c = 0; c < k; ++c) {
    // An empty cluster would divide by zero below and silently lose one of the k centres.
    if (counts[c] > 0) continue;
    std::size_t farthest = p.n;
    double far_d = -1.0;
    for (std::size_t i = 0; i < p.n; ++i) {
      // A point alone in its cluster cannot move: that would just empty another cluster.
      if (counts[assignments[i]] < 2) continue;
      double d = sq_dist<D>(p.row(i), centres.data() + assignments[i] * dim, dim);
      if (d > far_d) {
        far_d = d;
        farthest = i;
      }
    }
    if (farthest == p.n) continue;  // cannot happen with k <= n
    --counts[assignments[farthest]];
    assignments[farthest] = c;
    counts[c] = 1;
  }
  std::fill(centres.begin(), centres.end(), 0.0);
  for (std::size_t i = 0; i < p.n; ++i) {
    for (std::size_t j = 0; j < dim; ++j) centres[assignments[i] * dim + j] += p.row(i)[j];
  }
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < dim; ++j) centres[c * dim + j] /= static_cast<double>(counts[c]);
  }
}

// One start into s (its buffers reused).
template <std::size_t D>
void lloyd(const FlatPoints& p, std::size_t k, std::size_t max_iterations, std::mt19937_64& rng, Start& s,
           Workspace& w) {
  const std::size_t dim = dim_of<D>(p);
  seed_centres<D>(p, k, rng, s.centres, w);
  s.assignments.assign(p.n, k);  // k = "unassigned", so the first pass counts as a change
  s.within_ss = 0.0;
  s.converged = false;
  assign<D>(p, s.centres, k, s.assignments);
  for (std::size_t iter = 0; iter < max_iterations; ++iter) {
    update_centres<D>(p, k, s.assignments, s.centres, w);
    if (!assign<D>(p, s.centres, k, s.assignments)) {
      s.converged = true;
      break;
    }
  }
  // Converged, the centres are already the means of these assignments (no
  // cluster is empty after an update, and recomputing them gives the same
  // sums in the same order); otherwise move them to the means once more.
  if (!s.converged) update_centres<D>(p, k, s.assignments, s.centres, w);
  for (std::size_t i = 0; i < p.n; ++i) {
    s.within_ss += sq_dist<D>(p.row(i), s.centres.data() + s.assignments[i] * dim, dim);
  }
}

}  // namespace

KMeansFit kmeans_flat(const FlatPoints& p, std::size_t k, std::size_t restarts, std::size_t max_iterations,
                      std::mt19937_64& rng) {
  EGM_REQUIRE(k >= 1 && k <= p.n, ConfigError, "k-means needs 1 <= k <= number of points ({}), got k = {}", p.n, k);
  EGM_REQUIRE(restarts >= 1, ConfigError, "k-means needs at least one restart");
  Start best, s;
  // Restarts draw from the one rng in turn, so the fit depends on the seed and restart count only.
  best.within_ss = std::numeric_limits<double>::infinity();
  Workspace w;
  for (std::size_t r = 0; r < restarts; ++r) {
    if (p.dim == 1)
      lloyd<1>(p, k, max_iterations, rng, s, w);
    else if (p.dim == 2)
      lloyd<2>(p, k, max_iterations, rng, s, w);
    else
      lloyd<0>(p, k, max_iterations, rng, s, w);
    // Swap, not copy: s's old buffers are reused by the next restart. Ties keep the earlier restart.
    if (s.within_ss < best.within_ss) std::swap(best, s);
  }

  // Restarts can find the same clusters under any labels; sorting makes equal fits compare equal.
  // Canonical order: centres sorted lexicographically, labels remapped.
  std::vector<std::size_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  auto centre = [&](std::size_t c) { return best.centres.data() + c * p.dim; };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::lexicographical_compare(centre(a), centre(a) + p.dim, centre(b), centre(b) + p.dim);
  });
  std::vector<std::size_t> new_label(k);
  for (std::size_t rank = 0; rank < k; ++rank) new_label[order[rank]] = rank;

  KMeansFit fit;
  fit.k = k;
  fit.dim = p.dim;
  fit.within_ss = best.within_ss;
  fit.converged = best.converged;
  for (std::size_t rank = 0; rank < k; ++rank) fit.centres.emplace_back(centre(order[rank]), centre(order[rank]) + p.dim);
  fit.sizes.assign(k, 0);
  fit.assignments.resize(p.n);
  for (std::size_t i = 0; i < p.n; ++i) {
    fit.assignments[i] = new_label[best.assignments[i]];
    ++fit.sizes[fit.assignments[i]];
  }
  return fit;
}

}  // namespace detail

KMeansFit kmeans(const Points& points, std::size_t k, const KMeansOptions& options) {
  detail::FlatPoints flat = detail::flatten(points);
  std::mt19937_64 rng(options.seed);
  return detail::kmeans_flat(flat, k, options.restarts, options.max_iterations, rng);
}

}  // namespace egm::stats
