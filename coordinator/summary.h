// What the coordinator prints when a sweep ends: the analysis's headline
// (analysis::render_headline: the 2x2 with intervals, deltas, the interaction
// and the published numbers; each grid point's table and the table across
// points for a sweep with a grid; `egm analyze` prints the rest), or, when
// there is no analysis (no cell done, cells run with mixed world sizes), one
// line saying why; then every cell that failed for good, with its last error.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "db/results_db.h"
#include "spec/experiment_spec.h"

namespace egm::coordinator {

// "ega-s1: failed 2 times, no retries left: <last error>" per exhausted cell.
std::vector<std::string> failed_cell_lines(const std::vector<db::CellRow>& cells);

void print_sweep_summary(db::ResultsDb& db, const std::vector<db::CellRow>& cells, const spec::ExperimentSpec& spec,
                         std::FILE* out);

}  // namespace egm::coordinator
