// Which comparisons mix cells of different code: the groups by commit, source
// diff, LibTorch and device, and the note that names them.
#include "analysis/provenance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "analysis/sweep_analysis.h"

namespace egm::analysis {

std::string cell_list(const std::vector<std::string>& cells, size_t most) {
  // Long lists are cut after `most` names, with the total count.
  if (cells.size() <= most) return fmt::format("{}", fmt::join(cells, ", "));
  return fmt::format("{}, ... ({} cells)", fmt::join(cells.begin(), cells.begin() + static_cast<long>(most), ", "),
                     cells.size());
}

std::string ProvenanceMix::text() const {
  std::vector<std::string> parts;
  for (const ProvenanceGroup& g : groups)
    parts.push_back(fmt::format("{}: {}", g.provenance.text(), cell_list(g.cells, 6)));
  return fmt::format("{}: {}", fmt::join(comparisons, ", "), fmt::join(parts, "; "));
}

std::vector<ProvenanceMix> provenance_mixes(const SweepData& data, const SweepAnalysis& a) {
  // The cells a comparison uses: done, with a value of the metric, of its variants.
  auto groups_of = [&](const std::vector<std::string>& variants) {
    std::map<Provenance, std::vector<std::string>> by;
    for (const CellData& c : data.cells) {
      if (std::find(variants.begin(), variants.end(), c.row.variant) == variants.end()) continue;
      if (c.row.status != db::CellStatus::done || !c.value(a.metric)) continue;
      // A resumed result has the provenance of each attempt behind it, so one cell can sit in two groups.
      for (const Provenance& p : c.provenance) by[p].push_back(c.row.key);
    }
    std::vector<ProvenanceGroup> groups;
    for (auto& [p, cells] : by) groups.push_back({p, std::move(cells)});
    return groups;
  };
  std::vector<std::pair<std::string, std::vector<std::string>>> comparisons;
  for (const VariantSummary& v : a.variants) comparisons.push_back({v.variant, {v.variant}});
  if (!a.baseline.empty())
    for (const DeltaResult& d : a.deltas) comparisons.push_back({"delta(" + d.variant + ")", {a.baseline, d.variant}});
  if (a.interaction) {
    const Factors& f = a.interaction->factors;
    comparisons.push_back({"interaction", {f.a, f.b, f.ab, f.base}});
  }
  std::vector<ProvenanceMix> mixes;
  for (const auto& [name, variants] : comparisons) {
    std::vector<ProvenanceGroup> groups = groups_of(variants);
    // One provenance: nothing is mixed, nothing to say.
    if (groups.size() < 2) continue;
    // Comparisons that mix exactly the same groups share one note instead of repeating it.
    auto same = std::find_if(mixes.begin(), mixes.end(), [&](const ProvenanceMix& m) {
      // Groups come in map order (by provenance), so equal mixes compare equal element by element.
      if (m.groups.size() != groups.size()) return false;
      for (size_t i = 0; i < groups.size(); ++i)
        if (!(m.groups[i].provenance == groups[i].provenance) || m.groups[i].cells != groups[i].cells) return false;
      return true;
    });
    if (same != mixes.end()) {
      same->comparisons.push_back(name);
    } else {
      mixes.push_back({{name}, std::move(groups)});
    }
  }
  return mixes;
}

}  // namespace egm::analysis
