// The analysis as JSON: every number of a SweepAnalysis (summaries, deltas,
// the interaction with its bootstrap, the published comparison, exclusions,
// MoPE and gate parameters, notes). `egm analyze --format json` and the
// report's analysis.json; the grid's JSON (grid_analysis.h) nests it per point.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/sweep_analysis.h"

namespace egm::analysis {

nlohmann::json to_json(const SweepAnalysis& analysis);

}  // namespace egm::analysis
