// The analysis as JSON: every number of a SweepAnalysis (summaries, deltas,
// the interaction with its bootstrap, the published comparison, exclusions,
// MoPE and gate parameters, notes). `egm analyze --format json` and the
// report's analysis.json; the grid's JSON (grid_analysis.h) nests it per point.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/sweep_analysis.h"

namespace egm::analysis {

nlohmann::json to_json(const SweepAnalysis& analysis);

// What every analysis document (a SweepAnalysis, a GridAnalysis) names first:
// the sweep, its description, the metric and the confidence level.
template <typename Analysis>
nlohmann::json analysis_header_json(const Analysis& a) {
  return {{"sweep", a.sweep}, {"description", a.description}, {"metric", metric_name(a.metric)}, {"level", a.level}};
}

}  // namespace egm::analysis
