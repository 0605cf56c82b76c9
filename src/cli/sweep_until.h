// `egm sweep SPEC --until CLAIMS`: seeds until the claims are settled. The
// spec's seeds are the first batch; after each batch egm sweep looks at every
// claim's anytime-valid confidence sequence (src/analysis/sequences.h: the
// t-mixture over the paired per-seed contrasts, Bonferroni over the claims),
// records the look in the database (`looks`, schema v10), and either stops
// (every claim settled: its sequence excludes 0, or is narrower than
// +-half-width; or --max-seeds reached) or adds the next batch of seeds
// (--batch, default 1 per variant) by launching the sweep again with the spec
// extended (--extend). Looking after every batch is what the sequence is
// valid for: the decision holds at level alpha however many looks were taken.
// Run the same command again to resume: the seeds the sweep already has are
// its starting point. A spec with a grid is refused (one spec per point).
// The options (flags and the spec's "until" field): launch/until_options.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launch/until_options.h"
#include "spec/experiment_spec.h"

namespace egm::cli {

// The seeds the sweep already has in the database (its stored spec's), or
// the spec's own when it is new there.
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
void require_same_sequence(const launch::UntilOptions& options, const std::string& db_path,
                           const std::string& sweep_name);

// ConfigError unless the budget holds the seeds the sweep has already run
// (`seeds`, from seeds_so_far): one line naming them and the database.
void require_budget(const launch::UntilOptions& options, const std::vector<uint64_t>& seeds,
                    const spec::ExperimentSpec& spec, const std::string& db_path);

struct LookOutcome {
  bool stop = false;
  std::string why;                   // "every claim settled", "--max-seeds 8 reached", "seed 5 added"
  std::string added;                 // when !stop, the seeds added: "seed 5", "seeds 5-6"
  std::vector<uint64_t> next_seeds;  // the seeds to run next (all of them) when !stop
};

// One look after a finished launch: the claims' sequences over the sweep's
// seeds, a line per claim printed, the look recorded, and what comes next.
LookOutcome look_and_decide(const launch::UntilOptions& options, const std::vector<std::string>& claims,
                            const std::string& db_path, const spec::ExperimentSpec& spec);

// One sequential loop per sweep: held by egm sweep --until for its whole
// life, launches and looks alike (an flock on DB.until-NAME.lock beside the
// database; the kernel releases it when the process ends, however it ends). A
// second loop of the same sweep is refused in one line naming the holder.
class SequenceLock {
 public:
  SequenceLock(const std::string& db_path, const std::string& sweep_name);
  ~SequenceLock();
  SequenceLock(const SequenceLock&) = delete;
  SequenceLock& operator=(const SequenceLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

// Sets `next` of the sweep's last look (every claim's row): what happened
// instead of what the look decided, when a stop signal came in between.
void amend_last_look(const std::string& db_path, const std::string& sweep_name, const std::string& next);

// The spec with `seeds` (spec::with_seeds) as a file next to the database
// (NAME.until.json), for the next launch with --extend; its path.
std::string write_spec_with_seeds(const spec::ExperimentSpec& spec, const std::vector<uint64_t>& seeds,
                                  const std::string& db_path);

}  // namespace egm::cli
