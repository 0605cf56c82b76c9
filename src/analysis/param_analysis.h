// What the learned parameters say about the paper's mechanistic claims.
//
// MoPE (module "mope"): per run, the (omega, sigma) pairs at the last
// recorded step against those at initialisation (step 0), the paper's sigma
// regions (character [1,6), word [6,20), clause [20,55), sentence >= 55),
// the share of pairs on the admissibility boundary omega * sigma = 5 now and
// at init (every pair starts there, so "they all sit on the boundary" is only
// news if they moved), how far each pair moved in (log omega, log sigma), and
// a k-means clustering of (log omega, log sigma) with k chosen by the data
// (gap statistic; BIC and silhouette alongside) to test the "four scales"
// claim, for the learned pairs and, as a control, the initial ones.
//
// Gates (every other module, e.g. EGA's tau and alpha per layer and head):
// mean and SD over seeds of each parameter at the last step, with its mean at
// initialisation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/sweep_data.h"
#include "stats/kmeans_select.h"
#include "stats/sigma_region.h"

namespace egm::analysis {

struct ParamOptions {
  double boundary_tolerance = 1e-3;  // |omega * sigma / 5 - 1| <= this counts as on the boundary
  std::size_t kmax = 8;
  std::size_t gap_references = 20;
  bool cluster = true;               // k-means (the slowest part); off for quick summaries
  // Runs clustered per variant: at most this many, evenly spaced in seed
  // order (every run when a variant has no more); 0: every run. Each
  // clustered run's numbers are those of clustering every run; the others
  // have none, and ParamAnalysis::cluster_samples and a note say how many
  // of how many were clustered. ~1-2 ms of CPU per run: a 100,000-cell
  // sweep's 50,000 MoPE runs would take minutes.
  std::size_t cluster_runs = 256;
  // The gap statistic's reference: shared tables (stats/kmeans_select.h), or
  // B draws per run's pairs as before 2026-12-02 (tests compare the two).
  stats::GapReference gap_reference = stats::GapReference::shared;
};

struct MopePair {
  int64_t idx = 0;
  double omega = 0.0;
  double sigma = 0.0;
  stats::SigmaRegion region = stats::SigmaRegion::character;
  bool on_boundary = false;
  bool has_init = false;  // the rest is NaN / default without step-0 rows
  double omega0 = 0.0;
  double sigma0 = 0.0;
  stats::SigmaRegion region0 = stats::SigmaRegion::character;
  bool on_boundary0 = false;
  // Euclidean distance in (log omega, log sigma) between init and now.
  double log_move = 0.0;
  double sigma_ratio = 0.0;  // sigma / sigma0
};

struct MopeRun {
  std::string variant;
  std::string key;
  int64_t seed = 0;
  int64_t step = 0;        // the last step with MoPE rows
  bool has_init = false;   // step-0 rows for every pair
  std::vector<MopePair> pairs;
  std::array<std::size_t, 5> regions{};       // indexed by stats::SigmaRegion
  std::array<std::size_t, 5> regions_init{};
  double boundary_share = 0.0;
  double boundary_share_init = 0.0;           // NaN without init
  double move_median = 0.0;                   // NaN without init
  double move_max = 0.0;
  double sigma_ratio_median = 0.0;
  double sigma_ratio_max = 0.0;
  // k-means of (log omega, log sigma); only for the runs in the variant's
  // sample (ParamOptions::cluster_runs). Of each fit only what is reported is
  // kept: every k's scores and the chosen fit's centres and sizes (`fits`
  // ends at the chosen k, the fits before it empty; no assignments).
  bool clustered = false;
  stats::KSelection clusters;                 // learned pairs
  bool clustered_init = false;
  stats::KSelection clusters_init;            // initial pairs (control)
};

// One learned gate parameter (e.g. EGA tau of layer 2, head 5) over seeds.
struct GateParamStat {
  std::string variant;
  std::string module;
  int64_t layer = -1;
  int64_t idx = 0;
  std::string name;
  std::size_t n = 0;      // seeds
  double mean = 0.0;
  double sd = 0.0;        // NaN with one seed
  double min = 0.0;
  double max = 0.0;
  bool has_init = false;
  double init_mean = 0.0; // NaN without step-0 rows
};

// How many of a variant's MoPE runs were clustered (ParamOptions::cluster_runs).
struct ClusterSample {
  std::string variant;
  std::size_t clustered = 0;
  std::size_t runs = 0;  // runs with at least 3 usable pairs
};

struct ParamAnalysis {
  double boundary_tolerance = 1e-3;
  std::size_t cluster_runs = 0;       // the limit used (0: every run)
  std::vector<ClusterSample> cluster_samples;  // per variant with MoPE runs, in the order of `mope`
  std::vector<MopeRun> mope;          // spec order of variants, then seed
  std::vector<GateParamStat> gates;   // variant (spec order), module, name, layer, idx
  std::vector<std::string> notes;     // what could not be analysed, and why
};

// "all" -> 0 (every run), else a positive number of runs per variant;
// ConfigError otherwise.
std::size_t parse_cluster_runs(std::string_view text);

// `cells` are the cells that count (done); params come from data.params.
ParamAnalysis analyze_params(const SweepData& data, const std::vector<const CellData*>& cells,
                             const ParamOptions& options, std::uint64_t rng_seed);

}  // namespace egm::analysis
