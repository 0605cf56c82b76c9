// Percentile bootstrap: resample the values with replacement B times,
// recompute the statistic, take the (1-level)/2 and (1+level)/2 quantiles
// (type 7 interpolation) of the B results. The caller gives the RNG seed so
// the interval is reproducible bit for bit: same seed, same interval.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace egm::stats {

struct BootstrapInterval {
  double estimate = 0.0;  // the statistic on the original values
  double low = 0.0;
  double high = 0.0;
  double level = 0.95;
  std::size_t resamples = 0;
  std::uint64_t seed = 0;
};

using Statistic = std::function<double(const std::vector<double>&)>;

// Throws ConfigError on empty or non-finite input, resamples < 2, a level
// outside (0, 1), or a statistic that returns a non-finite value.
BootstrapInterval bootstrap_statistic(const std::vector<double>& values, const Statistic& statistic,
                                      std::uint64_t seed, std::size_t resamples = 10000,
                                      double level = 0.95);

BootstrapInterval bootstrap_mean(const std::vector<double>& values, std::uint64_t seed,
                                 std::size_t resamples = 10000, double level = 0.95);

}  // namespace egm::stats
