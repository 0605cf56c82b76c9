// k-means for a few dimensions (1-D sigma values, 2-D (log omega, log sigma)
// pairs of learned MoPE components): k-means++ seeding from a caller-seeded
// RNG, several restarts, Lloyd iterations, best within-cluster sum of
// squares kept. Same seed, same fit, on every platform.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace egm::stats {

// One point per row; every row has the same number of coordinates.
using Points = std::vector<std::vector<double>>;
Points points_1d(const std::vector<double>& values);
Points points_2d(const std::vector<std::array<double, 2>>& pairs);

struct KMeansOptions {
  std::size_t restarts = 10;         // independent k-means++ starts; the lowest within-SS wins
  std::size_t max_iterations = 100;  // Lloyd iterations per start
  std::uint64_t seed = 0;            // the caller's RNG seed
};

struct KMeansFit {
  std::size_t k = 0;
  std::size_t dim = 0;
  // Centres in lexicographic order of their coordinates (for 1-D: ascending),
  // so labels do not depend on which restart won.
  std::vector<std::vector<double>> centres;
  std::vector<std::size_t> assignments;  // centre index for each point
  std::vector<std::size_t> sizes;        // points per centre
  double within_ss = 0.0;                // sum of squared distances to own centre
  bool converged = false;                // the winning start stopped before max_iterations
};

// Throws ConfigError for no points, ragged or non-finite points, k = 0,
// k > number of points, or restarts = 0.
KMeansFit kmeans(const Points& points, std::size_t k, const KMeansOptions& options = {});

}  // namespace egm::stats
