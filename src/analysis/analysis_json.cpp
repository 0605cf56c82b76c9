// to_json: the analysis by section (variants, deltas, interaction, published,
// provenance, learned parameters), each number under a stable key.
#include "analysis/analysis_json.h"

#include <string>

#include "analysis/render.h"

namespace egm::analysis {

namespace {

using nlohmann::json;

json summary_json(const stats::Summary& s) {
  // No check for NaN fields (one seed: sd, the interval): nlohmann's dump() writes a non-finite number as null.
  return {{"n", s.n},           {"mean", s.mean},       {"sd", s.sd},
          {"se", s.se},         {"t_crit", s.t_crit},   {"ci_low", s.ci_low},
          {"ci_high", s.ci_high}, {"has_interval", s.has_interval}, {"level", s.level}};
}

json estimate_json(const Estimate& e) {
  return {{"estimate", e.estimate}, {"se", e.se},           {"df", e.df},
          {"ci_low", e.ci_low},     {"ci_high", e.ci_high}, {"has_interval", e.has_interval},
          {"n", e.n}};
}

json seeds_json(const stats::SeedValues& v) {
  json j = json::object();
  // JSON keys are strings: each seed as its decimal text.
  for (const auto& [seed, value] : v) j[std::to_string(seed)] = value;
  return j;
}

json kselection_json(const stats::KSelection& s) {
  json scores = json::array();
  for (const auto& k : s.scores)
    scores.push_back({{"k", k.k},
                      {"within_ss", k.within_ss},
                      {"gap", k.gap},
                      {"gap_se", k.gap_se},
                      {"bic", k.bic},
                      {"silhouette", k.silhouette}});
  json centres = json::array();
  // chosen() reads fits[chosen_k - 1]: only valid for chosen_k >= 1.
  if (s.chosen_k >= 1) {
    const stats::KMeansFit& fit = s.chosen();
    for (size_t c = 0; c < fit.centres.size(); ++c)
      // The points clustered are (log omega, log sigma) (param_analysis.cpp), so the centres are too.
      centres.push_back({{"log_omega", fit.centres[c][0]},
                         {"log_sigma", fit.centres[c][1]},
                         {"size", fit.sizes[c]}});
  }
  return {{"chosen_k", s.chosen_k},   {"criterion", stats::k_criterion_name(s.criterion)},
          {"gap_k", s.gap_k},         {"bic_k", s.bic_k},
          {"silhouette_k", s.silhouette_k}, {"kmax_used", s.kmax_used},
          {"scores", scores},         {"chosen_centres", centres}};
}

json regions_json(const std::array<std::size_t, 5>& r) {
  json j = json::object();
  // Keyed by region name, in sigma_region's order (below_1, character, ...).
  for (size_t i = 0; i < r.size(); ++i) j[stats::sigma_region_name(static_cast<stats::SigmaRegion>(i))] = r[i];
  return j;
}

json interaction_json(const InteractionAnalysis& ia) {
  const stats::InteractionResult& r = ia.result;
  json j = {{"factors", {{"a", ia.factors.a}, {"b", ia.factors.b}, {"ab", ia.factors.ab}, {"base", ia.factors.base}}},
            {"metric", metric_name(ia.metric)},
            {"mean_base", r.mean_base},
            {"mean_a", r.mean_a},
            {"mean_b", r.mean_b},
            {"mean_ab", r.mean_ab},
            {"delta_a", r.delta_a},
            {"delta_b", r.delta_b},
            {"delta_ab", r.delta_ab},
            {"estimate", r.estimate},
            {"se", r.interval.se},
            {"df", r.interval.df},
            {"t_crit", r.interval.t_crit},
            {"ci_low", r.interval.ci_low},
            {"ci_high", r.interval.ci_high},
            {"p", r.interval.p},
            {"has_interval", r.interval.has_interval},
            {"paired", r.paired},
            {"n", r.n},
            {"n_cells", r.n_cells},
            {"seeds", r.seeds},
            // per_seed[i] is the contrast of seeds[i], in the pairing's order.
            {"per_seed", r.per_seed},
            {"unmatched_seeds", ia.unmatched_seeds},
            {"method", r.method},
            {"ratio", {{"estimate", r.ratio_estimate}, {"low", r.ratio_low}, {"high", r.ratio_high}}},
            {"sum_of_parts", estimate_json(ia.sum_of_parts)},
            {"verdict", verdict_label(r.verdict)},
            {"verdict_text", ia.verdict_text}};
  // Null without a bootstrap (one seed, or cells not on shared seeds).
  j["bootstrap"] = r.has_bootstrap ? json{{"low", r.bootstrap.low},
                                          {"high", r.bootstrap.high},
                                          {"estimate", r.bootstrap.estimate},
                                          {"resamples", r.bootstrap.resamples},
                                          {"seed", r.bootstrap.seed},
                                          {"level", r.bootstrap.level}}
                                   : json(nullptr);
  return j;
}

// Every variant with each metric it has values for: the summary, the seeds and the setups behind them.
json variants_json(const SweepAnalysis& a) {
  json variants = json::array();
  for (const auto& v : a.variants) {
    json metrics = json::object();
    for (const auto& m : v.metrics) {
      // A metric no cell measured is left out, not written with n = 0.
      if (m.summary.n == 0) continue;
      json mj = summary_json(m.summary);
      mj["seeds"] = seeds_json(m.by_seed);
      json setups = json::array();
      // Each setup the metric's values came from (a resumed cell can add a second).
      for (const auto& s : m.setups) setups.push_back({{"world_size", s.world_size}, {"backend", s.backend}, {"device", s.device_kind}});
      mj["setups"] = setups;
      metrics[metric_name(m.metric)] = mj;
    }
    variants.push_back({{"variant", v.variant}, {"attention", v.attention}, {"position", v.position},
                        {"metrics", metrics}});
  }
  return variants;
}

json deltas_json(const SweepAnalysis& a) {
  json deltas = json::array();
  for (const auto& d : a.deltas) {
    // The estimate's fields at the top of each delta, beside its pairing details.
    json dj = estimate_json(d.delta);
    dj["variant"] = d.variant;
    dj["metric"] = metric_name(d.metric);
    dj["paired"] = d.paired;
    dj["seeds"] = d.seeds;
    dj["per_seed"] = d.per_seed;
    dj["unmatched_seeds"] = d.unmatched_seeds;
    dj["p"] = d.p;
    dj["p_holm"] = d.p_holm;
    dj["method"] = d.method;
    // Wilcoxon only for a paired delta; null for Welch.
    dj["wilcoxon"] = d.has_wilcoxon ? json{{"v", d.wilcoxon.v},
                                           {"p", d.wilcoxon.p},
                                           {"n_used", d.wilcoxon.n_used},
                                           {"n_zeros", d.wilcoxon.n_zeros},
                                           {"method", stats::wilcoxon_method_name(d.wilcoxon.method)}}
                                    : json(nullptr);
    deltas.push_back(dj);
  }
  return deltas;
}

json published_json(const PublishedComparison& p) {
  json rows = json::array();
  for (const auto& r : p.rows) {
    json rj = {{"variant", r.variant},
               {"published", r.published},
               {"ours", summary_json(r.ours)},
               {"inside_ci", r.inside_ci},
               {"prediction_low", r.prediction_low},
               {"prediction_high", r.prediction_high},
               {"inside_prediction", r.inside_prediction},
               {"has_interval", r.has_interval},
               {"delta_inside", r.delta_inside}};
    // Null where no delta is published (the baseline itself, or no published baseline).
    rj["published_delta"] = r.published_delta ? json(*r.published_delta) : json(nullptr);
    rj["our_delta"] = r.our_delta ? estimate_json(*r.our_delta) : json(nullptr);
    rows.push_back(rj);
  }
  json pj = {{"source", p.source}, {"metric", metric_name(p.metric)}, {"rows", rows}};
  // Null unless the spec publishes all four cells of the 2x2.
  pj["interaction"] = p.published_interaction
                          ? json{{"published", *p.published_interaction},
                                 // Our interaction on the published metric, which may differ from the analysis's.
                                 {"ours", p.our_interaction ? interaction_json(*p.our_interaction) : json(nullptr)},
                                 {"inside", p.interaction_inside}}
                          : json(nullptr);
  return pj;
}

json provenance_json(const SweepAnalysis& a) {
  json provenance = json::array();
  for (const ProvenanceMix& m : a.provenance) {
    json groups = json::array();
    for (const ProvenanceGroup& g : m.groups)
      groups.push_back({{"egm", g.provenance.commit},
                        {"diff_sha256", g.provenance.diff_sha256},
                        {"libtorch", g.provenance.torch_version},
                        {"device", g.provenance.device_kind},
                        {"cells", g.cells}});
    provenance.push_back({{"comparisons", m.comparisons}, {"groups", std::move(groups)}});
  }
  return provenance;
}

// One run's learned MoPE pairs: each pair where it ended (and began), the regions, the clusters.
json mope_run_json(const MopeRun& r) {
  json pairs = json::array();
  for (const auto& p : r.pairs) {
    json pj = {{"idx", p.idx},       {"omega", p.omega},
               {"sigma", p.sigma},   {"region", stats::sigma_region_name(p.region)},
               {"on_boundary", p.on_boundary}, {"has_init", p.has_init}};
    // The initial fields only where the pair's step-0 values were recorded.
    if (p.has_init) {
      pj["omega0"] = p.omega0;
      pj["sigma0"] = p.sigma0;
      pj["region0"] = stats::sigma_region_name(p.region0);
      pj["on_boundary0"] = p.on_boundary0;
      pj["log_move"] = p.log_move;
      pj["sigma_ratio"] = p.sigma_ratio;
    }
    pairs.push_back(pj);
  }
  json rj = {{"run", r.key},
             {"variant", r.variant},
             {"seed", r.seed},
             {"step", r.step},
             {"has_init", r.has_init},
             {"regions", regions_json(r.regions)},
             {"boundary_share", r.boundary_share},
             {"boundary_share_init", r.boundary_share_init},
             {"move_median", r.move_median},
             {"move_max", r.move_max},
             {"sigma_ratio_median", r.sigma_ratio_median},
             {"sigma_ratio_max", r.sigma_ratio_max},
             {"pairs", pairs}};
  // Null rather than zeros: without initial values there is nothing to count.
  rj["regions_init"] = r.has_init ? regions_json(r.regions_init) : json(nullptr);
  rj["clusters"] = r.clustered ? kselection_json(r.clusters) : json(nullptr);
  rj["clusters_init"] = r.clustered_init ? kselection_json(r.clusters_init) : json(nullptr);
  return rj;
}

// The learned parameters: MoPE's pairs per run, the gates' statistics, which runs were clustered.
json params_json(const ParamAnalysis& params) {
  json mope = json::array();
  for (const auto& r : params.mope) mope.push_back(mope_run_json(r));
  json gates = json::array();
  for (const auto& g : params.gates)
    gates.push_back({{"variant", g.variant}, {"module", g.module}, {"layer", g.layer}, {"head", g.idx},
                     {"name", g.name},       {"n", g.n},           {"mean", g.mean},   {"sd", g.sd},
                     {"min", g.min},         {"max", g.max},       {"init_mean", g.init_mean}});
  json samples = json::array();
  for (const auto& c : params.cluster_samples)
    samples.push_back({{"variant", c.variant}, {"clustered", c.clustered}, {"runs", c.runs}});
  return {{"boundary_tolerance", params.boundary_tolerance},
          // 0 means every run (--cluster-runs all).
          {"cluster_runs_per_variant", params.cluster_runs == 0 ? json("all") : json(params.cluster_runs)},
          {"cluster_samples", samples},
          {"mope", mope},
          {"gates", gates},
          {"notes", params.notes}};
}

}  // namespace

json to_json(const SweepAnalysis& a) {
  json j = analysis_header_json(a);
  j["baseline"] = a.baseline;
  // The bootstrap's seed: with it a rerun reproduces every interval.
  j["rng_seed"] = a.rng_seed;
  json excluded = json::array();
  for (const auto& e : a.excluded)
    excluded.push_back({{"cell", e.key}, {"variant", e.variant}, {"seed", e.seed}, {"status", e.status},
                        {"reason", e.reason}});
  // Every excluded cell with its reason, so the JSON alone explains the n.
  j["cells"] = {{"total", a.cells_total}, {"used", a.cells_used}, {"excluded", excluded}};
  j["variants"] = variants_json(a);
  j["deltas"] = deltas_json(a);
  j["interaction"] = a.interaction ? interaction_json(*a.interaction) : json(nullptr);
  j["no_interaction_reason"] = a.no_interaction_reason;
  j["published"] = a.published ? published_json(*a.published) : json(nullptr);
  json conflicts = json::array();
  for (const auto& c : a.setup_conflicts) conflicts.push_back({{"comparison", c.comparison}, {"cells", c.detail}});
  j["setup_conflicts"] = conflicts;
  j["provenance"] = provenance_json(a);
  // Only when some cell reused a run, so a sweep that trained every cell reads as before.
  if (!a.reused.empty()) {
    json reused = json::array();
    for (const db::ReusedCell& r : a.reused)
      reused.push_back({{"cell", r.key}, {"variant", r.variant}, {"from", r.from},
                        {"original_run", r.original_run ? json(*r.original_run) : json()}});
    j["reused"] = reused;
  }
  j["params"] = params_json(a.params);
  // The notes as the text and Markdown show them: the sweep's, the no-interaction reason, the parameters'.
  j["notes"] = all_notes(a);
  return j;
}

}  // namespace egm::analysis
