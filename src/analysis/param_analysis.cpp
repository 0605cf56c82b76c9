// The learned parameters read: MoPE's (omega, sigma) pairs against the boundary
// and the scale regions, their clusters (k chosen per run), the gates' statistics.
#include "analysis/param_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "analysis/table_cells.h"
#include "stats/descriptive.h"
#include "util/error.h"

namespace egm::analysis {

namespace {

using cells::kNaN;
constexpr double kAdmissibility = 5.0;  // MoPE keeps omega * sigma >= 5 (SPEC section 2)

bool on_boundary(double omega, double sigma, double tolerance) {
  // The distance to omega * sigma = 5 relative to 5: the tolerance is a fraction of the boundary.
  return std::fabs(omega * sigma / kAdmissibility - 1.0) <= tolerance;
}

// stats::quantile_sorted(sorted values, 0.5) without sorting them all: the
// same two order statistics in the same formula, so the same number.
double median(std::vector<double> values) {
  // 0 or 1 values: quantile_sorted's own answer (its error for none).
  if (values.size() < 2) return stats::quantile_sorted(values, 0.5);
  const double pos = 0.5 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
  const double a = values[lo];
  // After nth_element every later element is >= values[lo]: the smallest is the next order statistic.
  const double b = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(lo) + 1, values.end());
  return a + (pos - static_cast<double>(lo)) * (b - a);
}

struct OmegaSigma {
  std::optional<double> omega;
  std::optional<double> sigma;
  bool complete() const { return omega && sigma; }
};

// Of a clustering, what the analysis reports: every k's scores and the
// chosen fit's centres and sizes. The other fits, and every fit's
// assignments, are dropped (thousands of runs would hold them all).
void keep_what_is_read(stats::KSelection& s) {
  for (stats::KMeansFit& f : s.fits) {
    // Swapping with an empty vector frees the memory; clear() would keep the capacity.
    std::vector<std::size_t>().swap(f.assignments);
    if (f.k != s.chosen_k) f = stats::KMeansFit{};
  }
  // fits[k - 1] holds k: the fits past the chosen one go.
  if (s.chosen_k < s.fits.size()) s.fits.resize(s.chosen_k);
  s.fits.shrink_to_fit();
}

// The point sets to cluster: each distinct set once (every run's initial
// pairs are the same when the models initialise them the same way), the
// sets spread over the machine's cores. Each clustering depends only on its
// points and the seed, so the result does not depend on the threads.
class ClusterJobs {
 public:
  using PointSet = std::vector<std::array<double, 2>>;
  // Where the clustering of `points` goes (nothing below 3 points).
  void add(PointSet points, std::size_t run, bool init) {
    // Fewer than 3 points are too few to cluster, or to score any k.
    if (points.size() < 3) return;
    // Keyed by the points themselves: identical sets (the same init in every run) are clustered once.
    auto [it, fresh] = index_.emplace(std::move(points), sets_.size());
    if (fresh) sets_.push_back(&it->first);
    targets_.push_back({it->second, run, init});
  }

  void run(const ParamOptions& options, std::uint64_t rng_seed, std::vector<MopeRun>& runs) const {
    std::vector<stats::KSelection> results(sets_.size());
    stats::KSelectOptions k;
    k.kmax = options.kmax;
    k.gap_references = options.gap_references;
    k.gap_reference = options.gap_reference;
    k.kmeans.seed = rng_seed;
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
      // One atomic counter hands out the sets: each thread takes the next one not yet taken.
      for (std::size_t i = next++; i < sets_.size(); i = next++) {
        try {
          results[i] = stats::select_k(stats::points_2d(*sets_[i]), k);
          keep_what_is_read(results[i]);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          // The first error is kept and rethrown once every thread has joined.
          if (!error) error = std::current_exception();
        }
      }
    };
    const std::size_t threads =
        // At least about 16 sets per thread: starting a thread costs more than a few small clusterings.
        std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), (sets_.size() + 15) / 16);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    // The calling thread works too.
    work();
    for (std::thread& t : pool) t.join();
    if (error) std::rethrow_exception(error);
    // Results reach the runs after the join, in target order: no worker thread writes a run.
    for (const Target& t : targets_) {
      MopeRun& r = runs[t.run];
      (t.init ? r.clustered_init : r.clustered) = true;
      (t.init ? r.clusters_init : r.clusters) = results[t.set];
    }
  }

 private:
  struct Target {
    std::size_t set;
    std::size_t run;
    bool init;
  };
  std::map<PointSet, std::size_t> index_;
  std::vector<const PointSet*> sets_;  // into index_'s keys, in order of first appearance
  std::vector<Target> targets_;
};

// The (omega, sigma) pairs of a snapshot by idx ascending; empty when it has
// no MoPE omega or sigma. Of two values of one idx and name the later in the
// layout wins.
std::vector<std::pair<int64_t, OmegaSigma>> mope_pairs_of(const ParamSnapshot& snapshot) {
  std::vector<std::pair<int64_t, double>> omegas, sigmas;
  std::size_t at = 0;
  for (const db::ParamSeries& s : *snapshot.layout) {
    const bool omega = s.name == "omega", sigma = s.name == "sigma";
    if (s.module == "mope" && (omega || sigma)) {
      auto& into = omega ? omegas : sigmas;
      into.reserve(into.size() + static_cast<std::size_t>(s.count));
      for (int64_t i = 0; i < s.count; ++i) {
        const double v = snapshot.value(at + static_cast<std::size_t>(i));
        // NaN: the snapshot holds no value at this index.
        if (!std::isnan(v)) into.push_back({s.first + i, v});
      }
    }
    at += static_cast<std::size_t>(s.count);
  }
  // A layout lists each series by idx and the series in (module, layer, name,
  // idx) order, so these are sorted already unless MoPE has several layers.
  auto by_idx = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(omegas.begin(), omegas.end(), by_idx)) std::stable_sort(omegas.begin(), omegas.end(), by_idx);
  if (!std::is_sorted(sigmas.begin(), sigmas.end(), by_idx)) std::stable_sort(sigmas.begin(), sigmas.end(), by_idx);
  std::vector<std::pair<int64_t, OmegaSigma>> out;
  out.reserve(std::max(omegas.size(), sigmas.size()));
  std::size_t i = 0, j = 0;
  // Merge by idx: a pair may lack omega or sigma, and then is incomplete.
  while (i < omegas.size() || j < sigmas.size()) {
    const int64_t idx = j == sigmas.size()   ? omegas[i].first
                        : i == omegas.size() ? sigmas[j].first
                                             : std::min(omegas[i].first, sigmas[j].first);
    OmegaSigma pair;
    // Several values of one idx (MoPE in several layers): the later one wins, as said above.
    for (; i < omegas.size() && omegas[i].first == idx; ++i) pair.omega = omegas[i].second;
    for (; j < sigmas.size() && sigmas[j].first == idx; ++j) pair.sigma = sigmas[j].second;
    out.push_back({idx, pair});
  }
  return out;
}

void analyse_mope_run(const CellData& cell, const std::vector<ParamSnapshot>& snapshots, const ParamOptions& options,
                      ParamAnalysis& out) {
  // The last step with MoPE values, and step 0 (snapshots are by step ascending).
  std::vector<std::pair<int64_t, OmegaSigma>> last, at_zero;
  int64_t last_step = 0;
  // From the last snapshot back: the latest one that holds MoPE values.
  for (auto s = snapshots.rbegin(); s != snapshots.rend() && last.empty(); ++s) {
    last = mope_pairs_of(*s);
    last_step = s->step;
  }
  if (last.empty()) return;
  // Step 0 gives the initial values, unless the last values are step 0's themselves.
  if (last_step != 0 && snapshots.front().step == 0) at_zero = mope_pairs_of(snapshots.front());
  MopeRun run;
  run.variant = cell.row.variant;
  run.key = cell.row.key;
  run.seed = cell.row.seed;
  run.step = last_step;
  const bool init = !at_zero.empty();
  if (run.step == 0) out.notes.push_back(fmt::format("{}: only step-0 MoPE values recorded", run.key));

  std::vector<double> moves, ratios;
  moves.reserve(last.size());
  ratios.reserve(last.size());
  run.pairs.reserve(last.size());
  std::size_t skipped = 0, with_init = 0, boundary = 0, boundary0 = 0;
  for (const auto& [idx, now] : last) {
    // Positive and finite, as log and the boundary test need.
    const bool usable = now.complete() && *now.omega > 0 && *now.sigma > 0 && std::isfinite(*now.omega) &&
                        std::isfinite(*now.sigma);
    if (!usable) {
      ++skipped;
      continue;
    }
    MopePair p;
    p.idx = idx;
    p.omega = *now.omega;
    p.sigma = *now.sigma;
    p.region = stats::sigma_region(p.sigma);
    p.on_boundary = on_boundary(p.omega, p.sigma, options.boundary_tolerance);
    boundary += p.on_boundary;
    ++run.regions[static_cast<size_t>(p.region)];
    p.omega0 = p.sigma0 = p.log_move = p.sigma_ratio = kNaN;
    if (init) {
      // at_zero is sorted by idx (mope_pairs_of), so a binary search finds the pair.
      auto it = std::lower_bound(at_zero.begin(), at_zero.end(), idx,
                                 [](const auto& e, int64_t i) { return e.first < i; });
      if (it != at_zero.end() && it->first == idx && it->second.complete() && *it->second.omega > 0 &&
          *it->second.sigma > 0) {
        p.has_init = true;
        p.omega0 = *it->second.omega;
        p.sigma0 = *it->second.sigma;
        p.region0 = stats::sigma_region(p.sigma0);
        p.on_boundary0 = on_boundary(p.omega0, p.sigma0, options.boundary_tolerance);
        boundary0 += p.on_boundary0;
        ++run.regions_init[static_cast<size_t>(p.region0)];
        // The move in log space: doubling omega and doubling sigma count alike.
        const double dlo = std::log(p.omega) - std::log(p.omega0), dls = std::log(p.sigma) - std::log(p.sigma0);
        p.log_move = std::sqrt(dlo * dlo + dls * dls);
        p.sigma_ratio = p.sigma / p.sigma0;
        moves.push_back(p.log_move);
        ratios.push_back(p.sigma_ratio);
        ++with_init;
      }
    }
    run.pairs.push_back(p);
  }
  if (skipped)
    out.notes.push_back(fmt::format("{}: {} MoPE pairs without a positive omega and sigma skipped", run.key, skipped));
  if (run.pairs.empty()) return;
  const double n = static_cast<double>(run.pairs.size());
  // Comparisons with the start only when every pair has its initial values.
  run.has_init = with_init == run.pairs.size();
  run.boundary_share = static_cast<double>(boundary) / n;
  run.boundary_share_init = run.has_init ? static_cast<double>(boundary0) / n : kNaN;
  run.move_median = run.has_init ? median(moves) : kNaN;
  run.move_max = run.has_init ? *std::max_element(moves.begin(), moves.end()) : kNaN;
  run.sigma_ratio_median = run.has_init ? median(ratios) : kNaN;
  run.sigma_ratio_max = run.has_init ? *std::max_element(ratios.begin(), ratios.end()) : kNaN;
  if (!run.has_init)
    out.notes.push_back(fmt::format("{}: no step-0 MoPE values for every pair: no comparison with initialisation",
                                    run.key));
  out.mope.push_back(std::move(run));
}

// Which runs are clustered (ParamOptions::cluster_runs): per variant, the
// runs with at least 3 pairs in seed order, all of them or `limit` evenly
// spaced (positions floor(i * M / limit)). Their points are rebuilt from the
// pairs: the same logarithms of the same values as analyse_mope_run took.
void plan_clustering(const ParamOptions& options, ClusterJobs& jobs, ParamAnalysis& out) {
  std::vector<std::string> variants;  // in the order of out.mope
  std::map<std::string, std::vector<std::size_t>> candidates;
  for (std::size_t i = 0; i < out.mope.size(); ++i) {
    const MopeRun& r = out.mope[i];
    if (r.pairs.size() < 3) continue;
    auto [it, fresh] = candidates.try_emplace(r.variant);
    if (fresh) variants.push_back(r.variant);
    it->second.push_back(i);
  }
  out.cluster_runs = options.cluster_runs;
  for (const std::string& variant : variants) {
    std::vector<std::size_t>& runs = candidates[variant];
    // Seed order, then key: the sample does not depend on the order the cells were loaded in.
    std::stable_sort(runs.begin(), runs.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(out.mope[a].seed, out.mope[a].key) < std::tie(out.mope[b].seed, out.mope[b].key);
    });
    const std::size_t m = runs.size();
    const std::size_t n = options.cluster_runs == 0 ? m : std::min(options.cluster_runs, m);
    out.cluster_samples.push_back({variant, n, m});
    for (std::size_t i = 0; i < n; ++i) {
      // Evenly spaced positions floor(i M / n), as said above.
      const std::size_t run = runs[i * m / n];
      const MopeRun& r = out.mope[run];
      ClusterJobs::PointSet learned, init;
      for (const MopePair& p : r.pairs) {
        learned.push_back({std::log(p.omega), std::log(p.sigma)});
        if (r.has_init) init.push_back({std::log(p.omega0), std::log(p.sigma0)});
      }
      jobs.add(std::move(learned), run, false);
      if (r.has_init) jobs.add(std::move(init), run, true);
    }
  }
}

// A note per variant whose runs were not all clustered: how many were, and
// the gap statistic's k over them.
void note_samples(ParamAnalysis& out) {
  for (const ClusterSample& s : out.cluster_samples) {
    if (s.clustered == s.runs) continue;
    std::map<std::size_t, std::size_t> gap_k;
    for (const MopeRun& r : out.mope)
      if (r.variant == s.variant && r.clustered) ++gap_k[r.clusters.gap_k];
    std::vector<std::string> counts;
    for (const auto& [k, runs] : gap_k) counts.push_back(fmt::format("k = {} in {}", k, runs));
    out.notes.push_back(fmt::format(
        "{}: k-means on {} of its {} MoPE runs (evenly spaced in seed order; --cluster-runs all clusters every "
        "run); the gap statistic chose {}",
        s.variant, s.clustered, s.runs, fmt::join(counts, ", ")));
  }
}

}  // namespace

std::size_t parse_cluster_runs(std::string_view text) {
  // 0 stands for every run (ParamOptions::cluster_runs).
  if (text == "all") return 0;
  std::size_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  // from_chars stops at the first non-digit: end must reach the text's end, so "12x" is refused.
  EGM_REQUIRE(error == std::errc() && end == text.data() + text.size() && n > 0 && !text.empty(), ConfigError,
              "--cluster-runs: '{}' is neither 'all' nor a positive number of runs per variant", std::string(text));
  return n;
}

ParamAnalysis analyze_params(const SweepData& data, const std::vector<const CellData*>& cells,
                             const ParamOptions& options, std::uint64_t rng_seed) {
  ParamAnalysis out;
  out.boundary_tolerance = options.boundary_tolerance;
  std::map<std::string, size_t> variant_order;
  // Gate rows keep the spec's variant order; a variant the spec does not list sorts after.
  for (size_t i = 0; i < data.spec.variants.size(); ++i) variant_order.emplace(data.spec.variants[i], i);
  auto order_of = [&](const std::string& v) {
    auto it = variant_order.find(v);
    return it == variant_order.end() ? variant_order.size() : it->second;
  };

  // (variant order, variant, module, layer, idx, name) -> final values and init values over seeds
  using GateKey = std::tuple<size_t, std::string, std::string, int64_t, int64_t, std::string>;
  using GateValues = std::pair<std::vector<double>, std::vector<double>>;
  std::map<GateKey, GateValues> gates;
  // (variant, a series of a layout) -> its values' entries in `gates`, idx by idx:
  // layouts are shared, so each series is looked up once per variant.
  std::map<std::pair<std::string, const db::ParamSeries*>, std::vector<GateValues*>> series_slots;
  auto slots_of = [&](const std::string& variant, const db::ParamSeries& s) -> const std::vector<GateValues*>& {
    auto [it, fresh] = series_slots.try_emplace({variant, &s});
    if (fresh)
      for (int64_t i = 0; i < s.count; ++i)
        it->second.push_back(&gates[GateKey{order_of(variant), variant, s.module, s.layer, s.first + i, s.name}]);
    return it->second;
  };
  ClusterJobs jobs;
  for (const CellData* cell : cells) {
    auto it = data.params.find(cell->row.id);
    if (it == data.params.end()) continue;
    const std::vector<ParamSnapshot>& snapshots = it->second;
    analyse_mope_run(*cell, snapshots, options, out);
    std::map<std::string, int64_t> last_step;  // per module: the last step with a value of it
    auto each_gate_series = [&](const ParamSnapshot& p, auto&& f) {
      std::size_t at = 0;
      for (const db::ParamSeries& s : *p.layout) {
        // Every series that is not MoPE's is summarised as a gate parameter.
        if (s.module != "mope") f(s, at);
        at += static_cast<std::size_t>(s.count);
      }
    };
    for (const ParamSnapshot& p : snapshots)
      each_gate_series(p, [&](const db::ParamSeries& s, std::size_t at) {
        for (int64_t i = 0; i < s.count; ++i)
          if (!std::isnan(p.value(at + static_cast<std::size_t>(i)))) {
            // Per module: the last step at which any of its series has a value.
            int64_t& last = last_step.try_emplace(s.module, p.step).first->second;
            last = std::max(last, p.step);
            break;
          }
      });
    for (const ParamSnapshot& p : snapshots)
      each_gate_series(p, [&](const db::ParamSeries& s, std::size_t at) {
        auto last = last_step.find(s.module);
        if (last == last_step.end()) return;  // no value of the module anywhere
        // Only two steps are read: each module's last, and step 0 for the initial values.
        const bool final_values = p.step == last->second, init_values = p.step == 0 && last->second != 0;
        if (!final_values && !init_values) return;
        const std::vector<GateValues*>& slots = slots_of(cell->row.variant, s);
        for (int64_t i = 0; i < s.count; ++i) {
          const double v = p.value(at + static_cast<std::size_t>(i));
          if (std::isnan(v)) continue;
          GateValues& g = *slots[static_cast<std::size_t>(i)];
          // GateValues: the last step's values first, step 0's second.
          (final_values ? g.first : g.second).push_back(v);
        }
      });
  }
  if (options.cluster) {
    plan_clustering(options, jobs, out);
    jobs.run(options, rng_seed, out.mope);
    note_samples(out);
  }
  for (const auto& [key, values] : gates) {
    const auto& [order, variant, module, layer, idx, name] = key;
    // A series with initial values only (none at the last step) has nothing to summarise.
    if (values.first.empty()) continue;
    GateParamStat g;
    g.variant = variant;
    g.module = module;
    g.layer = layer;
    g.idx = idx;
    g.name = name;
    std::vector<double> finite;
    // A diverged value (inf) would poison the mean; n counts only the values kept.
    for (double v : values.first)
      if (std::isfinite(v)) finite.push_back(v);
    if (finite.empty()) continue;
    const stats::Summary s = stats::summarize(finite);
    g.n = s.n;
    g.mean = s.mean;
    g.sd = s.sd;
    g.min = *std::min_element(finite.begin(), finite.end());
    g.max = *std::max_element(finite.begin(), finite.end());
    g.has_init = !values.second.empty();
    g.init_mean = kNaN;
    if (g.has_init) {
      double sum = 0;
      for (double v : values.second) sum += v;
      g.init_mean = sum / static_cast<double>(values.second.size());
    }
    out.gates.push_back(std::move(g));
  }
  return out;
}

}  // namespace egm::analysis
