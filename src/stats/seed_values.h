// Per-seed results: the shape in which runs arrive from the database
// (seed -> value, e.g. val loss), and matching two such sets by seed.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace egm::stats {

using SeedValues = std::map<std::int64_t, double>;

// The values in key order.
std::vector<double> values_of(const SeedValues& by_seed);

// Keys present in both sets, and those present in only one (all ascending).
struct KeyMatch {
  std::vector<std::int64_t> shared;
  std::vector<std::int64_t> only_in_first;
  std::vector<std::int64_t> only_in_second;
};
KeyMatch match_keys(const SeedValues& first, const SeedValues& second);

}  // namespace egm::stats
