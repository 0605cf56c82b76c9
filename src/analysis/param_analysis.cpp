#include "analysis/param_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
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

namespace egm::analysis {

namespace {

using cells::kNaN;
constexpr double kAdmissibility = 5.0;  // MoPE keeps omega * sigma >= 5 (SPEC section 2)

bool on_boundary(double omega, double sigma, double tolerance) {
  return std::fabs(omega * sigma / kAdmissibility - 1.0) <= tolerance;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return stats::quantile_sorted(values, 0.5);
}

struct OmegaSigma {
  std::optional<double> omega;
  std::optional<double> sigma;
  bool complete() const { return omega && sigma; }
};

// The point sets to cluster: each distinct set once (every run's initial
// pairs are the same when the models initialise them the same way), the
// sets spread over the machine's cores. Each clustering depends only on its
// points and the seed, so the result does not depend on the threads.
class ClusterJobs {
 public:
  using PointSet = std::vector<std::array<double, 2>>;
  // Where the clustering of `points` goes (nothing below 3 points).
  void add(PointSet points, std::size_t run, bool init) {
    if (points.size() < 3) return;
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
      for (std::size_t i = next++; i < sets_.size(); i = next++) {
        try {
          results[i] = stats::select_k(stats::points_2d(*sets_[i]), k);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
        }
      }
    };
    const std::size_t threads =
        std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), (sets_.size() + 15) / 16);
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    if (error) std::rethrow_exception(error);
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

void analyse_mope_run(const CellData& cell, const std::vector<ParamRow>& rows, const ParamOptions& options,
                      ClusterJobs& jobs, ParamAnalysis& out) {
  std::map<int64_t, std::map<int64_t, OmegaSigma>> by_step;  // step -> idx -> pair
  for (const auto& r : rows) {
    if (r.module != "mope") continue;
    if (r.name == "omega") by_step[r.step][r.idx].omega = r.value;
    if (r.name == "sigma") by_step[r.step][r.idx].sigma = r.value;
  }
  if (by_step.empty()) return;
  MopeRun run;
  run.variant = cell.row.variant;
  run.key = cell.row.key;
  run.seed = cell.row.seed;
  run.step = by_step.rbegin()->first;
  const std::map<int64_t, OmegaSigma>* init = nullptr;
  if (auto it = by_step.find(0); it != by_step.end() && run.step != 0) init = &it->second;
  if (run.step == 0) out.notes.push_back(fmt::format("{}: only step-0 MoPE values recorded", run.key));

  std::vector<std::array<double, 2>> learned_points, init_points;
  std::vector<double> moves, ratios;
  std::size_t skipped = 0, with_init = 0, boundary = 0, boundary0 = 0;
  for (const auto& [idx, now] : by_step.rbegin()->second) {
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
    learned_points.push_back({std::log(p.omega), std::log(p.sigma)});
    p.omega0 = p.sigma0 = p.log_move = p.sigma_ratio = kNaN;
    if (init) {
      auto it = init->find(idx);
      if (it != init->end() && it->second.complete() && *it->second.omega > 0 && *it->second.sigma > 0) {
        p.has_init = true;
        p.omega0 = *it->second.omega;
        p.sigma0 = *it->second.sigma;
        p.region0 = stats::sigma_region(p.sigma0);
        p.on_boundary0 = on_boundary(p.omega0, p.sigma0, options.boundary_tolerance);
        boundary0 += p.on_boundary0;
        ++run.regions_init[static_cast<size_t>(p.region0)];
        const double dlo = std::log(p.omega) - std::log(p.omega0), dls = std::log(p.sigma) - std::log(p.sigma0);
        p.log_move = std::sqrt(dlo * dlo + dls * dls);
        p.sigma_ratio = p.sigma / p.sigma0;
        moves.push_back(p.log_move);
        ratios.push_back(p.sigma_ratio);
        init_points.push_back({std::log(p.omega0), std::log(p.sigma0)});
        ++with_init;
      }
    }
    run.pairs.push_back(p);
  }
  if (skipped)
    out.notes.push_back(fmt::format("{}: {} MoPE pairs without a positive omega and sigma skipped", run.key, skipped));
  if (run.pairs.empty()) return;
  const double n = static_cast<double>(run.pairs.size());
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
  if (options.cluster) {
    jobs.add(std::move(learned_points), out.mope.size(), false);
    if (run.has_init) jobs.add(std::move(init_points), out.mope.size(), true);
  }
  out.mope.push_back(std::move(run));
}

}  // namespace

ParamAnalysis analyze_params(const SweepData& data, const std::vector<const CellData*>& cells,
                             const ParamOptions& options, std::uint64_t rng_seed) {
  ParamAnalysis out;
  out.boundary_tolerance = options.boundary_tolerance;
  std::map<std::string, size_t> variant_order;
  for (size_t i = 0; i < data.spec.variants.size(); ++i) variant_order.emplace(data.spec.variants[i], i);
  auto order_of = [&](const std::string& v) {
    auto it = variant_order.find(v);
    return it == variant_order.end() ? variant_order.size() : it->second;
  };

  // (variant order, variant, module, layer, idx, name) -> final values and init values over seeds
  using GateKey = std::tuple<size_t, std::string, std::string, int64_t, int64_t, std::string>;
  std::map<GateKey, std::pair<std::vector<double>, std::vector<double>>> gates;
  ClusterJobs jobs;
  for (const CellData* cell : cells) {
    auto it = data.params.find(cell->row.id);
    if (it == data.params.end()) continue;
    const std::vector<ParamRow>& rows = it->second;
    analyse_mope_run(*cell, rows, options, jobs, out);
    std::map<std::string, int64_t> last_step;  // per module
    for (const auto& r : rows)
      if (r.module != "mope") last_step[r.module] = std::max(last_step[r.module], r.step);
    for (const auto& r : rows) {
      if (r.module == "mope") continue;
      const GateKey key{order_of(cell->row.variant), cell->row.variant, r.module, r.layer, r.idx, r.name};
      if (r.step == last_step[r.module]) gates[key].first.push_back(r.value);
      if (r.step == 0 && last_step[r.module] != 0) gates[key].second.push_back(r.value);
    }
  }
  jobs.run(options, rng_seed, out.mope);
  for (const auto& [key, values] : gates) {
    const auto& [order, variant, module, layer, idx, name] = key;
    if (values.first.empty()) continue;
    GateParamStat g;
    g.variant = variant;
    g.module = module;
    g.layer = layer;
    g.idx = idx;
    g.name = name;
    std::vector<double> finite;
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
