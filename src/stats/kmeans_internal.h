// Flat row-major point storage shared by kmeans.cpp and kmeans_select.cpp
// (the gap statistic clusters generated reference data without building
// nested vectors). Not part of the public API.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "stats/kmeans.h"

namespace egm::stats::detail {

struct FlatPoints {
  std::size_t n = 0;
  std::size_t dim = 0;
  std::vector<double> x;  // n * dim
  const double* row(std::size_t i) const { return x.data() + i * dim; }
};

// Validates (ConfigError) and flattens.
FlatPoints flatten(const Points& points);

// k-means on validated flat points; rng drives all restarts in turn.
KMeansFit kmeans_flat(const FlatPoints& points, std::size_t k, std::size_t restarts, std::size_t max_iterations,
                      std::mt19937_64& rng);

double squared_distance(const double* a, const double* b, std::size_t dim);

}  // namespace egm::stats::detail
