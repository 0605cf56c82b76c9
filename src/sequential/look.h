// A look of a sequential sweep (egm sweep --until): after each launch, every
// claim's anytime-valid confidence sequence over the seeds the sweep has
// (src/analysis/sequences.h: the t-mixture over the paired per-seed
// contrasts, Bonferroni over the claims), recorded in the database (`looks`,
// schema v10), rendered for people (look_line: the one rendering, egm sweep's
// and egm status's), and the decision: stop (every claim settled: its sequence
// excludes 0, or is narrower than +-half-width; or --max-seeds reached) or the
// next batch of seeds. Also the refusals a loop checks before it starts, and
// where it goes on from.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "db/results_db.h"
#include "sequential/until_options.h"
#include "spec/experiment_spec.h"

namespace egm::sequential {

// The seeds the sweep already has in the database (its stored spec's), or
// the spec's own when it is new there (or an earlier --until of another seed
// list ran it).
std::vector<uint64_t> seeds_so_far(const std::string& db_path, const spec::ExperimentSpec& spec);

// Where a sweep's sequence began: the first look, or the last recorded with
// --new-sequence, and the family-wise alpha and half-width it was judged at.
struct SequenceStart {
  int64_t look = 0;
  double alpha = 0;
  double half_width = 0;  // 0: none
};
std::optional<SequenceStart> sequence_start(const std::string& db_path, const std::string& sweep_name);

// ConfigError, one line naming both, when a resumed sequence would be judged
// at another alpha or half-width than it began with (unless --new-sequence).
void require_same_sequence(const UntilOptions& options, const std::string& db_path, const std::string& sweep_name);

// ConfigError unless the budget holds the seeds the sweep has already run
// (`seeds`, from seeds_so_far), some claim could settle within it, and the
// seeds it would add are seeds a spec may hold: one line each.
void require_budget(const UntilOptions& options, const std::vector<uint64_t>& seeds, const spec::ExperimentSpec& spec,
                    const std::string& db_path);

struct LookOutcome {
  bool stop = false;
  std::string why;                   // "every claim settled", "--max-seeds 8 reached", "seed 5 added"
  std::string added;                 // when !stop, the seeds added: "seed 5", "seeds 5-6"
  std::vector<uint64_t> next_seeds;  // the seeds to run next (all of them) when !stop
};

// One look after a finished launch: the claims' sequences over the sweep's
// seeds, the look recorded (one transaction) and written to `out`, and what
// comes next. The last look stands instead (no second look over the same
// data; its `next` updated when the decision now differs) when no cell of the
// sweep changed since it and it judged the same claims.
LookOutcome look_and_decide(const UntilOptions& options, const std::vector<std::string>& claims,
                            const std::string& db_path, const spec::ExperimentSpec& spec, std::ostream& out);

// One claim at one look, for people: "look 3: delta(ega) after 3 seeds
// +0.0123 [-inf, +inf] undecided, not settled" (egm sweep --until prints it
// as it looks, egm status for the last look).
std::string look_line(const db::LookRow& look);

// Sets `next` of the sweep's last look (every claim's row): what happened
// instead of what the look decided, when a stop signal came in between.
void amend_last_look(const std::string& db_path, const std::string& sweep_name, const std::string& next);

// The spec with `seeds` (spec::with_seeds) as a file next to the database
// (NAME.until.json), for the next launch with --extend; its path.
std::string write_spec_with_seeds(const spec::ExperimentSpec& spec, const std::vector<uint64_t>& seeds,
                                  const std::string& db_path);

}  // namespace egm::sequential
