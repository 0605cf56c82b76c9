// `egm paper`: the paper's scorecard from a results database. For every
// published claim (paper_claims.h) and every sweep (or grid point of one)
// that measured it, one row: the claim as published, the sweep and its scale
// (preset, width, depth, context, batch, steps, seeds), egm's estimate with
// its fixed-n t interval, the anytime-valid sequence where the sweep added
// seeds on data (it has looks), the verdict, and for the EGA family the same
// estimate on the autoregressive loss beside the window loss. A claim no
// sweep measured gets one row saying so.
//
// Pairing happens inside one sweep (inside one grid point) only, exactly as
// `egm analyze` pairs: sweeps of different scales never meet in a number,
// and two sweeps that measured one claim give two rows.
//
// Verdicts (the published number gives the sign to test):
//   reproduced     the interval lies on the published side of 0 (MoPE: see below)
//   contradicted   it lies on the other side
//   not settled    it contains 0, or there is only one seed
//   not measured   no sweep has done cells of every variant the claim needs
//   reference      the baseline's own value: the zero every delta is measured from
// The interval decided on is the fixed-n t interval, or, where the sweep has
// looks (seeds added until a claim settled), the anytime-valid sequence,
// which stays valid after such optional stopping. MoPE: "every pair on the
// boundary" is reproduced when every learned pair of every run is on it
// (within ParamOptions::boundary_tolerance), contradicted when the t interval
// of the per-run share lies below 1; "k clusters" compares the share of runs
// in which the gap statistic chose k with 1/2 (exact binomial interval).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/paper_claims.h"
#include "analysis/sweep_analysis.h"
#include "db/results_db.h"
#include "db/table_format.h"

namespace egm::analysis {

enum class ClaimVerdict { reproduced, contradicted, not_settled, not_measured, reference };
// "reproduced in sign" (value, delta, interaction) or "reproduced" (MoPE),
// "contradicted", "not settled", "not measured", "reference".
const char* claim_verdict_text(ClaimVerdict verdict, ClaimKind kind);

// At what scale a sweep trained: from the run config of one of its done cells.
struct Scale {
  bool known = false;  // false: no done cell with a readable config
  std::string preset;
  int64_t n_layer = 0, n_head = 0, d_model = 0, context = 0, batch = 0, steps = 0;
  std::string text() const;  // "small: 2 layers, 4 heads, d 64, T 64, B 32, 1000 steps"
};

// A claim's anytime-valid sequence at its last look (sequences.h), replayed
// over the sweep's seeds in run order as `egm analyze` replays it.
struct ScoreSequence {
  std::size_t seeds = 0;
  double estimate = 0, lower = 0, upper = 0;  // bounds +-inf while unbounded
  double p_anytime = 1;
  std::string decision;  // positive, negative, narrow, undecided
  std::optional<std::size_t> settled_at;
};

struct ScoreRow {
  std::size_t claim = 0;   // index into Scorecard::claims.claims
  std::string sweep;       // empty: no sweep measured the claim
  std::string point;       // the grid point's label; empty without a grid
  Scale scale;
  std::size_t seeds = 0;   // seeds (runs, for the MoPE claims) behind the estimate
  std::optional<stats::Summary> mean;  // value claims: our mean of the variant
  std::optional<Estimate> estimate;    // the delta, I, or the MoPE share, with its fixed-n interval
  std::string method;                  // how `estimate` was formed
  bool sequential = false;             // the sweep has looks
  std::optional<ScoreSequence> sequence;
  std::string basis;                   // which interval decided the verdict
  ClaimVerdict verdict = ClaimVerdict::not_measured;
  bool ega_family = false;             // a variant whose gate reads later keys
  std::optional<stats::Summary> ar_mean;  // value claims: the variant's autoregressive loss
  std::optional<Estimate> ar_estimate;    // the same delta or I on the autoregressive loss
  std::string detail;                  // MoPE counts, the loop's own last look, why not measured
};

struct Scorecard {
  PaperClaims claims;
  double level = 0.95;
  std::string database;
  std::vector<ScoreRow> rows;  // claims in file order; a claim's sweeps in database order
  std::vector<std::string> notes;  // sweeps that could not be analysed, and why
};

struct ScorecardOptions {
  double level = 0.95;
  std::uint64_t rng_seed = 12345;  // k-means and the bootstrap, as egm analyze
  ParamOptions params;
  std::vector<std::string> sweeps;  // only these (names); empty: every sweep not superseded
};

// Reads every sweep (one read snapshot) and scores every claim. Never throws
// for a database that lacks what a claim needs: the row says "not measured".
// ConfigError for a --sweep name the database does not hold.
Scorecard build_scorecard(db::ResultsDb& db, const PaperClaims& claims, const ScorecardOptions& options = {});

// The rows as people read them (text, Markdown, the serve page): claim,
// published, sweep, scale, seeds, estimate with interval, sequence, verdict,
// autoregressive, note.
db::Table scorecard_display_table(const Scorecard& card);
// Every number at full precision (CSV): one column per quantity, NaN empty.
db::Table scorecard_number_table(const Scorecard& card);
nlohmann::json scorecard_json(const Scorecard& card);

enum class ScorecardFormat { text, markdown, csv, json };
// "text" | "markdown" | "csv" | "json"; ConfigError naming them otherwise.
ScorecardFormat parse_scorecard_format(std::string_view name);
std::string render_scorecard(const Scorecard& card, ScorecardFormat format);

}  // namespace egm::analysis
