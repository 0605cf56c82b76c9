// The end-of-sweep printout: the analysis's headline (or why there is none)
// and one line per cell that failed for good.
#include "coordinator/summary.h"

#include <fmt/format.h>

#include "analysis/render.h"

namespace egm::coordinator {

std::vector<std::string> failed_cell_lines(const std::vector<db::CellRow>& cells) {
  std::vector<std::string> lines;
  for (const auto& c : cells) {
    // Only cells with no retries left: a failed cell that will be retried is not a final failure.
    if (c.status != db::CellStatus::failed || c.failures < c.max_attempts) continue;
    lines.push_back(fmt::format("{}: failed {} time{}, no retries left: {}", c.key, c.failures,
                                c.failures == 1 ? "" : "s", c.last_error.value_or("(no error text)")));
  }
  return lines;
}

void print_sweep_summary(db::ResultsDb& db, const std::vector<db::CellRow>& cells, const spec::ExperimentSpec& spec,
                         std::FILE* out) {
  std::string headline;
  try {
    headline = analysis::render_headline(db, spec.name);
  } catch (const std::exception& e) {
    // The sweep itself finished: a missing or failing analysis is reported, not allowed to turn the exit into an error.
    headline = fmt::format("no analysis of sweep {}: {}\n", spec.name, e.what());
  }
  std::fprintf(out, "\n%s", headline.c_str());
  const auto failed = failed_cell_lines(cells);
  if (!failed.empty()) {
    std::fprintf(out, "\n%zu cell%s failed for good:\n", failed.size(), failed.size() == 1 ? "" : "s");
    for (const auto& l : failed) std::fprintf(out, "  %s\n", l.c_str());
  }
  std::fflush(out);
}

}  // namespace egm::coordinator
