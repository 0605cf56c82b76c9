// egm merge OUT IN...: the sweeps of several results databases (clusters that
// each ran some seeds or variants of one spec) combined into a new database
// (src/db/merge.h). Torch-free, like the read-only verbs: the inputs are only
// read, and OUT appears only once it is complete.
#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "db/merge.h"
#include "util/terminal_text.h"

namespace egm::cli {
namespace {

struct MergeArgs {
  std::string out;
  std::vector<std::string> inputs;
  std::string prefer;
  bool force = false;
  bool quiet = false;
};

void run_merge(const MergeArgs& a) {
  SafeStdout out;  // text from the database: control bytes escaped (util/terminal_text.h)
  db::MergeOptions options;
  options.out = a.out;
  options.inputs = a.inputs;
  options.prefer = a.prefer;
  options.force = a.force;
  const db::MergeSummary s = db::merge_databases(options, [&](const std::string& line) {
    // Progress on stderr, the summary on stdout: a script can keep the summary and drop the chatter.
    if (!a.quiet) std::fprintf(stderr, "egm merge: %s\n", terminal_safe(line).c_str());
  });
  for (const std::string& note : s.notes) std::fprintf(stderr, "egm merge: %s\n", terminal_safe(note).c_str());
  for (const db::MergedSweep& w : s.sweeps) {
    std::vector<std::string> from;
    for (size_t i = 0; i < a.inputs.size(); ++i)
      if (w.cells_from[i] > 0) from.push_back(fmt::format("{} from {}", w.cells_from[i], a.inputs[i]));
    out << fmt::format("sweep {}: {} cells ({} done): {}", w.name, w.cells, w.done, fmt::join(from, ", "));
    if (w.kept_once > 0) out << fmt::format("; {} done in several inputs with the same results, kept once", w.kept_once);
    if (w.preferred > 0) out << fmt::format("; {} conflicts decided by --prefer", w.preferred);
    if (const std::string twins = db::twins_text(w); !twins.empty()) out << "; " << twins;
    if (w.spec_widened) out << "; its spec lists the inputs' seeds and variants together";
    out << "\n";
  }
  out << fmt::format("wrote {} ({} sweep(s), {} runs, {} metric rows)\n", a.out, s.sweeps.size(), s.runs,
                           s.metrics);
}

}  // namespace

void register_merge_command(CLI::App& app) {
  auto a = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "combine the sweeps of several results databases into a new one");
  cmd->add_option("out", a->out, "the new database")->required();
  cmd->add_option("inputs", a->inputs, "the databases to merge (only read)")->required();
  cmd->add_option("--prefer", a->prefer,
                  "the input whose results win when a cell is done in two inputs with different results, or whose "
                  "run is kept when two inputs trained one run identity with different results (refused otherwise)");
  cmd->add_flag("--force", a->force, "replace OUT when it exists");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress lines on stderr");
  cmd->footer(
      "Sweeps are matched by name; cells by variant, seed, grid point and run config. The specs may differ only in "
      "seeds and variants (the merged spec lists them all). Each run keeps its host, commit and source diff, and "
      "names the input it came from (runs.merge_source -> merge_sources). A run identity trained in two inputs (other "
      "sweeps or cells) is kept once: the other cell is linked to it as a reused run is. Exit status: 0 written; 2 refused, "
      "nothing written.");
  cmd->callback([a] { run_merge(*a); });
}

}  // namespace egm::cli
