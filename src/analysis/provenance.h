// Which comparisons mix code: a delta, a variant's mean or the interaction
// whose cells were trained by different commits, source modifications,
// LibTorch versions or device kinds. Not a refusal (the same computation can
// come out bitwise equal across builds), but said wherever the numbers are
// shown (egm analyze, report, serve), naming the cells of each kind, so a
// reader knows when a difference may be the code's and not the model's.
#pragma once

#include <string>
#include <vector>

#include "analysis/sweep_data.h"

namespace egm::analysis {

struct SweepAnalysis;

struct ProvenanceGroup {
  Provenance provenance;
  std::vector<std::string> cells;  // cell keys, spec order
};

struct ProvenanceMix {
  std::vector<std::string> comparisons;  // "ega", "delta(ega)", "interaction": the ones with these same groups
  std::vector<ProvenanceGroup> groups;   // two or more
  std::string text() const;              // "delta(ega), interaction: egm a (...): base-s0, ...; egm b (...): ega-s1"
};

// "a, b, c" or, past `most`, the first `most` and the count: "a, b, ... (40 cells)".
std::string cell_list(const std::vector<std::string>& cells, size_t most);

// The comparisons of `a` (each variant's summary, each delta against the
// baseline, the interaction) over the cells of `data` they use, that mix
// provenances; comparisons with the same groups share one entry.
std::vector<ProvenanceMix> provenance_mixes(const SweepData& data, const SweepAnalysis& a);

}  // namespace egm::analysis
