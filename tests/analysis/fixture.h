// Fixture sweeps for the analysis tests, written through ResultsDb exactly as
// the coordinator would (cells, attempts, results, metrics, params). The
// numbers are chosen so every statistic can be worked out by hand; the
// arithmetic is written next to the checks in the tests.
//
// The main fixture, sweep "fixture" (variants base, ega, mope, ega_mope),
// final val loss per seed 0, 1, 2:
//   base      1.48  1.50  1.52
//   ega       1.40  1.41  1.45
//   mope      1.51  1.53  1.52
//   ega_mope  1.37  1.39  1.38
// best_val = final_val - 0.01; full_val = final_val + 0.005 for base and ega
// only; no ar_val. eval_val curves at steps 0, 50,
// 100 (4.00 + 0.01 seed, 2.00 + 0.02 seed, final). MoPE params (12 pairs) for
// mope and ega_mope at steps 0 and 100; EGA tau/alpha (2 layers x 2 heads)
// for ega and ega_mope at steps 0 and 100. Published values: SPEC section 4.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/results_db.h"

namespace egm::testing {

// How close a computed number must be to the one a test works out by hand.
inline constexpr double kTol = 1e-10;

// The table above; seeds 0..2.
double fixture_final(const std::string& variant, int64_t seed);

// MoPE pair i at initialisation: f_i = exp(linspace(log 1, log(0.99 pi), 12)),
// omega0 = f_i, sigma0 = 5 / f_i (SPEC section 2).
double mope_omega0(int i);
double mope_sigma0(int i);
// Learned pairs: sigma_i * (1 + 0.01 seed) from
// {2.0, 2.1, 2.2, 8.0, 8.4, 8.8, 30, 31.5, 33, 70, 73.5, 77}: three per
// region; omega = 5 / sigma (on the boundary) except pairs 1 and 7: 6 / sigma.
double mope_sigma(int i, int64_t seed);
double mope_omega(int i, int64_t seed);
constexpr int kMopePairs = 12;
// EGA at step 100: tau = 0.1 layer + 0.05 head + 0.01 seed,
// alpha = 2 + 0.1 head - 0.02 seed; at step 0 tau 0, alpha 2.
double ega_tau(int64_t layer, int64_t head, int64_t seed);
double ega_alpha(int64_t layer, int64_t head, int64_t seed);

// How a fixture cell ends.
enum class Outcome { done, failed_exhausted, failed_retry, running, pending, interrupted };

struct FixtureCell {
  std::string variant;
  int64_t seed = 0;
  Outcome outcome = Outcome::done;
  std::optional<double> final_val;
  std::optional<double> best_val;
  std::optional<double> full_val;
  db::RunInfo info;  // the (last) attempt's setup
  // When set, a first attempt ran with this setup, was interrupted, and the
  // done attempt resumed from its checkpoint.
  std::optional<db::RunInfo> resumed_from;
  bool curves = true;
  bool params = true;
  std::string config_json = "{}";  // the cell's run config as stored (the scale egm paper reports)
  std::optional<int64_t> grid_point;     // a grid sweep's point, and its values ({"train.lr": 0.001})
  std::optional<std::string> grid_json;
};

db::RunInfo single_rank();  // world 1, backend none

struct FixtureOptions {
  std::string name = "fixture";
  std::vector<int64_t> seeds{0, 1, 2};
  // Per key ("ega-s1"): another setup for that cell's attempt.
  std::map<std::string, db::RunInfo> setups;
  std::vector<FixtureCell> extra_cells;   // added after the main ones
  std::vector<std::string> replace_keys;  // main cells left out (replace them via extra_cells)
};

// The main fixture with ega-s1 trained on two ranks over MPI: its comparisons mix world sizes.
FixtureOptions mixed_world_size_options();

// Writes the sweep; returns cell ids by key.
std::map<std::string, int64_t> write_fixture(db::ResultsDb& db, const FixtureOptions& options = {});

// Writes any list of cells as sweep `name` with the given spec JSON.
std::map<std::string, int64_t> write_cells(db::ResultsDb& db, const std::string& name, const std::string& spec_json,
                                           const std::vector<FixtureCell>& cells);

// The main fixture's cells (4 variants x seeds), with their values.
std::vector<FixtureCell> main_cells(const std::vector<int64_t>& seeds);
// base and ega over `seeds` (variant by variant): done on one rank with their
// fixture_final losses only, no learned parameters.
std::vector<FixtureCell> pair_cells(const std::vector<int64_t>& seeds);
// base and ega over `seeds` (seed by seed, in that order), final losses only, no
// curves or parameters: base 1.5, base - ega = 0.05 + 0.01 * ((seed * 7) % 5 - 2),
// contrasts 0.03..0.07 (sd ~0.016), which a sequence bounds positive by 12 seeds.
std::vector<FixtureCell> sequence_cells(const std::vector<int64_t>& seeds);
// The spec JSON of the main fixture (factors, baseline, published values).
std::string main_spec_json(const std::string& name, const std::vector<int64_t>& seeds);

}  // namespace egm::testing
