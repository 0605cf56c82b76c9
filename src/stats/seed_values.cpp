// Per-seed values (seed -> value): the values in seed order, and which seeds
// two sets share and which only one has.
#include "stats/seed_values.h"

namespace egm::stats {

std::vector<double> values_of(const SeedValues& by_seed) {
  std::vector<double> out;
  out.reserve(by_seed.size());
  for (const auto& [seed, value] : by_seed) out.push_back(value);
  return out;
}

KeyMatch match_keys(const SeedValues& first, const SeedValues& second) {
  KeyMatch m;
  auto a = first.begin();
  auto b = second.begin();
  // Both maps are sorted by key: one merge pass.
  while (a != first.end() || b != second.end()) {
    if (b == second.end() || (a != first.end() && a->first < b->first)) {
      m.only_in_first.push_back((a++)->first);
    } else if (a == first.end() || b->first < a->first) {
      m.only_in_second.push_back((b++)->first);
    } else {
      m.shared.push_back(a->first);
      ++a;
      ++b;
    }
  }
  return m;
}

}  // namespace egm::stats
