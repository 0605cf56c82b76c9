// egm plan: how many seeds each claim of a sweep needs, from the per-seed
// paired contrasts its pilot seeds measured (the deltas against the
// baseline and the 2x2 interaction, formed as `egm analyze` forms them), and
// what running them would cost (the sweep's measured run times,
// compute.h). Fixed-n planning with the paired t (stats/power.h); several
// claims at alpha / m each (Bonferroni, which Holm's first step also needs,
// so the plan is conservative for Holm). A grid sweep is planned per point.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "analysis/compute.h"
#include "analysis/sweep_analysis.h"
#include "db/results_db.h"
#include "stats/confidence_sequence.h"

namespace egm::analysis {

struct PlanOptions {
  AnalysisOptions analysis;               // metric, factors, mixed setups (params are never analysed)
  double alpha = 0.05;                    // family-wise over the claims planned
  stats::Adjustment adjustment = stats::Adjustment::holm;
  std::optional<double> half_width;       // t interval half-width to reach (loss units)
  std::optional<double> effect;           // effect to detect (loss units) ...
  double power = 0.8;                     // ... with this power
  std::vector<std::string> claims;        // "delta(ega)" or "ega", "interaction"; empty: all
};

// The smallest pilot that can estimate a variance to plan from.
inline constexpr std::size_t kMinPilotSeeds = 3;

struct ClaimPlan {
  std::string name;                   // "delta(ega)", "interaction"
  std::vector<std::string> variants;  // whose cells the claim compares
  std::size_t pilot_seeds = 0;        // paired per-seed contrasts measured
  bool paired = true;
  double estimate = 0.0;              // mean contrast (NaN with no contrast)
  double sd = 0.0;                    // its sample sd (NaN below 2)
  bool too_small = false;             // fewer than kMinPilotSeeds paired contrasts: no plan
  std::string note;                   // why there is no plan, in one sentence
  double claim_alpha = 0.0;           // alpha / m (or alpha)
  double half_width_now = 0.0;        // t half-width at the pilot's n (NaN below 2)
  std::optional<std::size_t> seeds_for_half_width;
  double effect_sd = 0.0;             // effect / sd
  double power_now = 0.0;             // power at the pilot's n
  std::optional<std::size_t> seeds_for_power;
  std::optional<std::size_t> seeds() const;  // the larger of the two asked for
};

struct VariantPlan {
  std::string variant;
  std::size_t seeds_done = 0;      // done cells with the metric
  std::size_t cells_to_add = 0;    // seeds_needed - seeds_done, at least 0
  std::size_t cells_costed = 0;    // done cells whose attempts were timed
  ComputeTotals per_cell;          // mean over those cells (runs = 1)
  ComputeTotals implied;           // per_cell x cells_to_add
};

struct SweepPlan {
  std::string sweep;
  std::string point;                  // grid point label; empty without a grid
  double alpha = 0.05;
  stats::Adjustment adjustment = stats::Adjustment::holm;
  std::optional<double> half_width;
  std::optional<double> effect;
  double power = 0.8;
  std::vector<ClaimPlan> claims;
  std::size_t seeds_needed = 0;       // max over the claims with a plan; 0 when none has one
  std::vector<VariantPlan> variants;  // the variants of the planned claims, spec order
  std::size_t cells_to_add = 0;
  ComputeTotals implied;              // what the cells to add would cost at the measured rates
  bool uncosted = false;              // some variant with cells to add has no timed cell
  // A sequential sweep of this spec (egm sweep --until) splits alpha over every
  // claim the analysis forms, not only the ones planned here
  // (src/stats/README.md, "Several claims"): that family, each claim's level
  // in it, and the seeds before its sequences can be bounded at all.
  std::size_t until_claims = 0;
  double until_claim_alpha = 0.0;
  std::size_t until_first_bounded = 0;
};

// Throws ConfigError without --half-width or --effect, with a half-width or
// effect <= 0, alpha outside (0, 0.5), power outside (alpha, 1), a claim the
// sweep cannot form (naming the ones it can), an unknown sweep. One plan per
// grid point (one without a grid).
std::vector<SweepPlan> plan_sweep(db::ResultsDb& db, const std::string& sweep, const PlanOptions& options);
// The same on loaded data (per grid point for a grid); compute may be empty.
std::vector<SweepPlan> plan_data(const SweepData& data, const ComputeStatement& compute, const PlanOptions& options);
// The plan of already analysed data (no grid); compute may be empty.
SweepPlan plan_from_analysis(const SweepData& data, const SweepAnalysis& analysis, const ComputeStatement& compute,
                             const PlanOptions& options);

std::string render_plan_text(const std::vector<SweepPlan>& plans);
std::string plan_json(const std::vector<SweepPlan>& plans);

}  // namespace egm::analysis
