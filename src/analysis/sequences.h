// Each claim's anytime-valid confidence sequence (stats/confidence_sequence.h)
// over the seeds a sweep has, looked at after every seed in the order the
// seeds were run (the spec's seed list: --extend appends), with its decision
// and the look at which it settled. Valid however the number of seeds was
// chosen, also when seeds were added after looking; the fixed-n t interval
// of `egm analyze` is only valid when the seed count was fixed in advance,
// and is printed beside it with that caveat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/sweep_analysis.h"
#include "db/table_format.h"
#include "stats/confidence_sequence.h"

namespace egm::analysis {

struct SequenceOptions {
  double alpha = 0.05;  // family-wise over the claims
  stats::Adjustment adjustment = stats::Adjustment::bonferroni;
  double half_width = 0;  // > 0: a claim narrower than +-half_width is settled too
  double prior_sd = 1.0;  // the t-mixture's tau
};

struct ClaimSequence {
  std::string claim;                       // "delta(ega)", "interaction"
  std::vector<int64_t> seeds;              // in look order
  std::vector<double> contrasts;           // per seed, same order
  std::vector<stats::SequenceLook> looks;  // one per seed
  stats::TMixtureOptions options;          // alpha per claim, prior sd
  stats::Decision decision = stats::Decision::undecided;  // at the last look
  std::vector<stats::Decision> decisions;  // at every look
  std::optional<std::size_t> settled_at;   // seeds at the first look where the claim was settled
  // The fixed-n t interval over the same contrasts (from the analysis), at its level.
  bool fixed_has_interval = false;
  double fixed_low = 0, fixed_high = 0;
};

// The claims of the analysis (each paired delta, the paired interaction;
// unpaired ones are left out, with no sequence to replay). Throws
// ConfigError for alpha outside (0, 0.5) or prior_sd <= 0.
std::vector<ClaimSequence> claim_sequences(const SweepAnalysis& analysis, const std::vector<uint64_t>& seed_order,
                                           const SequenceOptions& options = {});

// "anytime-valid confidence sequences ..." then a line per claim.
std::string render_sequences_text(const std::vector<ClaimSequence>& sequences, const SequenceOptions& options,
                                  double level);

// Every look: claim, look (seeds so far), seed, contrast, estimate, lower,
// upper (empty while unbounded), anytime p, decision at that look, settled
// (yes at and after the look that settled it), method, params. The report's
// sequences.csv.
db::Table sequences_table(const std::vector<ClaimSequence>& sequences, const SequenceOptions& options);

}  // namespace egm::analysis
