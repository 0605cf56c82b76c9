// What the coordinator prints when a sweep ends: the analysis layer's main
// table (src/analysis: the 2x2 with intervals, deltas, the interaction and
// the published numbers; `egm analyze` prints the rest), or, should the
// analysis fail, a plain per-variant table (mean and sd of the final val loss
// over the seeds that finished, delta to the baseline, published value);
// then every cell that failed for good, with its last error.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "db/results_db.h"
#include "db/table_format.h"
#include "spec/experiment_spec.h"

namespace egm::coordinator {

// Columns: variant, n, final_val (mean), sd (sample, n-1), delta (mean minus
// the baseline's mean), full_val (mean), published. Variants in spec order;
// only cells with status done count.
db::Table variant_summary(const std::vector<db::CellRow>& cells, const spec::ExperimentSpec& spec);

// "ega-s1: failed 2 times, no retries left: <last error>" per exhausted cell.
std::vector<std::string> failed_cell_lines(const std::vector<db::CellRow>& cells);

void print_sweep_summary(db::ResultsDb& db, const std::vector<db::CellRow>& cells, const spec::ExperimentSpec& spec,
                         std::FILE* out);

}  // namespace egm::coordinator
