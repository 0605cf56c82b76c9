// egm paper's scorecard: each published claim matched to the sweeps (and grid
// points) that measured it, scored with the analysis of sweep_analysis.h
// (deltas against the claim's reference, the interaction on the claim's
// factors, the autoregressive loss for the EGA family), sequences.h (where
// the sweep has looks) and param_analysis.h (the MoPE claims); then rendered.
#include "analysis/scorecard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/grid_analysis.h"
#include "analysis/number_text.h"
#include "analysis/sequences.h"
#include "analysis/tables.h"
#include "config/run_config.h"
#include "config/variants.h"
#include "stats/descriptive.h"
#include "stats/distributions.h"
#include "util/enum_names.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace egm::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One sweep, or one grid point of a sweep: the unit inside which cells pair.
struct Unit {
  std::string sweep;
  std::string point;
  SweepData data;
  bool sequential = false;                     // the sweep has looks
  std::map<std::string, db::LookRow> looks;    // claim -> the loop's last look of it
  std::optional<std::string> spec_baseline;    // the spec's (analysis_of replaces data.spec.baseline)
  std::optional<Factors> spec_factors;         // the spec's 2x2, which the loop's "interaction" is on
  std::set<std::string> measured;              // variants with a done cell holding the claims' metric
  std::map<std::string, SweepAnalysis> cache;  // by reference, metric and factors
  std::map<std::string, std::string> refused;  // the same keys: why analyze_sweep refused
  std::optional<ParamAnalysis> params;
  Scale scale;
};

Scale scale_of(const SweepData& data) {
  Scale s;
  for (const CellData& c : data.cells) {
    // The first done cell whose config can be read stands for the unit's scale.
    if (c.row.status != db::CellStatus::done) continue;
    try {  // the run config as the worker trained it; the spec's preset fills what it leaves out
      const RunConfig rc = run_config_from_json(parse_json(c.row.config_json, JsonLimits::user(), "config_json"),
                                                data.spec.preset.empty() ? "paper" : data.spec.preset);
      s.known = true;
      s.preset = rc.preset;
      s.n_layer = rc.model.n_layer;
      s.n_head = rc.model.n_head;
      s.d_model = rc.model.d_model;
      s.context = rc.model.block_size;
      s.batch = rc.train.batch_size;
      s.steps = rc.train.max_steps;
      return s;
    } catch (const Error&) {
      continue;  // an unreadable config: try the next cell
    }
  }
  return s;
}

std::string analysis_key(const std::string& reference, Metric metric, const std::optional<Factors>& f) {
  // The key names everything the analysis depends on besides the unit's data.
  return fmt::format("{}|{}|{}", reference, metric_name(metric),
                     f ? fmt::format("{},{},{},{}", f->a, f->b, f->ab, f->base) : "");
}

// The unit's analysis against `reference` (its deltas) on `metric`, with the
// interaction on `factors` when given; nullptr when analyze_sweep refused
// (mixed setups), the reason in u.refused.
const SweepAnalysis* analysis_of(Unit& u, const std::string& reference, Metric metric,
                                 const std::optional<Factors>& factors, const ScorecardOptions& o) {
  const std::string key = analysis_key(reference, metric, factors);
  if (auto it = u.cache.find(key); it != u.cache.end()) return &it->second;
  // A refusal is remembered too, so a refused analysis is not retried for every claim.
  if (u.refused.count(key)) return nullptr;
  AnalysisOptions ao;
  ao.metric = metric;
  ao.level = o.level;
  ao.factors = factors;
  ao.rng_seed = o.rng_seed;
  ao.analyse_params = false;  // the MoPE claims read analyze_params once per unit
  // analyze_sweep takes its baseline from the spec: the claim's reference stands in for it.
  u.data.spec.baseline = reference;
  try {
    return &u.cache.emplace(key, analyze_sweep(u.data, ao)).first->second;
  } catch (const ConfigError& e) {
    // Only a ConfigError (mixed setups, unknown factors) is a refusal; anything else propagates.
    u.refused[key] = e.what();
    return nullptr;
  }
}

// The sign the interval shows, against the sign published.
ClaimVerdict sign_verdict(double published, double low, double high) {
  // The interval's sign: +1 above 0, -1 below, 0 when it contains 0.
  const int ours = low > 0 ? 1 : high < 0 ? -1 : 0;
  const int theirs = published > 0 ? 1 : published < 0 ? -1 : 0;
  // A published 0 has no sign to reproduce, and an interval around 0 settles nothing.
  if (ours == 0 || theirs == 0) return ClaimVerdict::not_settled;
  return ours == theirs ? ClaimVerdict::reproduced : ClaimVerdict::contradicted;
}

Estimate estimate_of(const stats::InteractionResult& r) {
  Estimate e = from_contrast(r.interval, r.n);
  e.estimate = r.estimate;  // the interaction's own estimate, as egm analyze reports it
  return e;
}

// The replayed sequence of `claim` ("delta(ega)", "interaction"), as egm analyze prints it.
std::optional<ScoreSequence> sequence_of(const SweepAnalysis& a, const Unit& u, const std::string& claim, double level) {
  SequenceOptions so;
  so.alpha = 1.0 - level;
  if (so.alpha <= 0 || so.alpha >= 0.5) return std::nullopt;  // no sequence at a level of 0.5 or less
  for (const ClaimSequence& c : claim_sequences(a, u.data.spec.seeds, so)) {
    // Only this claim's sequence, and only once it has a look.
    if (c.claim != claim || c.looks.empty()) continue;
    // The last look: what the loop would report now.
    const stats::SequenceLook& l = c.looks.back();
    return ScoreSequence{l.n, l.estimate, l.lower, l.upper, l.p_anytime, stats::decision_name(c.decision),
                         c.settled_at};
  }
  return std::nullopt;
}

// The verdict from the sequence where the sweep has looks, else from the t interval.
void decide(ScoreRow& row, double published, double level) {
  if (row.sequential && row.sequence) {
    row.basis = "anytime-valid sequence (seeds were added on data)";
    // A settled sequence's side of 0, passed as a point interval of that sign.
    row.verdict = row.sequence->decision == "positive"   ? sign_verdict(published, 1, 1)
                  : row.sequence->decision == "negative" ? sign_verdict(published, -1, -1)
                                                         : ClaimVerdict::not_settled;
    return;
  }
  // The fixed-n t interval: one seed has none, so nothing is settled.
  if (!row.estimate || !row.estimate->has_interval) {
    row.basis = "no interval (one seed)";
    row.verdict = ClaimVerdict::not_settled;
    return;
  }
  // A sequential sweep's unpaired claim has no contrasts to replay: the t interval decides, and says so.
  row.basis = row.sequential ? fmt::format("{} t interval (unpaired: no sequence to replay)", percent(level))
                             : fmt::format("{} t interval", percent(level));
  row.verdict = sign_verdict(published, row.estimate->ci_low, row.estimate->ci_high);
}

// What the --until loop itself said of this claim at its last look (its own family of claims).
void loop_look(ScoreRow& row, const Unit& u, const std::string& claim, const std::string& reference) {
  if (u.spec_baseline.value_or("base") != reference) return;  // the loop's deltas are against the spec's baseline
  auto it = u.looks.find(claim);
  if (it == u.looks.end()) return;
  const db::LookRow& l = it->second;
  row.detail = fmt::format("the --until loop's last look (look {}, {} seeds): {}{}", l.look, l.seeds, l.decision,
                           l.settled ? ", settled" : "");
}

// The paper's own scale (SPEC.md section 3, the `paper` preset): only there can an absolute value be compared.
bool at_paper_scale(const Scale& s) {
  const RunConfig p = preset_config("paper");
  // Every dimension must match the preset; an unreadable config (known = false) never does.
  return s.known && s.n_layer == p.model.n_layer && s.n_head == p.model.n_head && s.d_model == p.model.d_model &&
         s.context == p.model.block_size && s.batch == p.train.batch_size && s.steps == p.train.max_steps;
}

// At the paper's scale: is the published value where one more seed of ours would fall (it is one seed)?
std::string value_check(const stats::Summary& ours, double published, double level) {
  if (!ours.has_interval) return "";
  // The published number is one seed's: mean +- t sd sqrt(1 + 1/n) is where one more seed of ours falls.
  const double half = ours.t_crit * ours.sd * std::sqrt(1.0 + 1.0 / static_cast<double>(ours.n));
  const bool inside = published >= ours.mean - half && published <= ours.mean + half;
  return fmt::format("at the paper's scale the published {} lies {} our {} prediction interval of one seed {}",
                     human::loss(published), inside ? "inside" : "outside", percent(level),
                     human::plain_interval(ours.mean - half, ours.mean + half));
}

void add_detail(ScoreRow& row, const std::string& text) {
  if (text.empty()) return;
  row.detail += (row.detail.empty() ? "" : "; ") + text;
}

// EGA's gate reads later keys, so its val loss is not autoregressive: ar_val is reported beside it.
bool sees_future(const std::string& variant) { return attention_sees_future(resolve_variant(variant).attention); }

// value and delta claims: the variant against the claim's reference.
void score_delta(ScoreRow& row, Unit& u, const PaperClaim& c, const PaperClaims& claims, const ScorecardOptions& o) {
  const SweepAnalysis* a = analysis_of(u, c.reference, claims.metric, std::nullopt, o);
  if (!a) {
    row.detail = "not analysed: " + u.refused.at(analysis_key(c.reference, claims.metric, std::nullopt));
    return;
  }
  const VariantSummary* v = a->find_variant(c.variant);
  // The variant's own mean is shown beside the delta.
  if (v) row.mean = v->at(claims.metric).summary;
  row.ega_family = sees_future(c.variant);
  if (c.variant == c.reference) {  // the baseline's own value
    row.verdict = ClaimVerdict::reference;
    row.seeds = row.mean ? row.mean->n : 0;
    row.basis = "the zero of every delta";
  } else if (const DeltaResult* d = a->find_delta(c.variant)) {
    row.estimate = d->delta;
    row.method = d->method;
    // What the delta rests on: the shared seeds when paired.
    row.seeds = d->delta.n;
    if (row.sequential) row.sequence = sequence_of(*a, u, "delta(" + c.variant + ")", o.level);
    decide(row, c.delta.value_or(kNaN), o.level);  // no published delta: no sign to test, not settled
    loop_look(row, u, "delta(" + c.variant + ")", c.reference);
  }
  // An absolute value can be compared only at the paper's own scale; elsewhere only the delta is scored.
  if (c.kind == ClaimKind::value && row.mean && at_paper_scale(row.scale))
    add_detail(row, value_check(*row.mean, *c.value, o.level));
  if (!row.ega_family) return;
  // What the gate gains from later keys: the same numbers on the prefix-only loss.
  if (const SweepAnalysis* ar = analysis_of(u, c.reference, Metric::ar_val, std::nullopt, o)) {
    if (const VariantSummary* av = ar->find_variant(c.variant); av && av->at(Metric::ar_val).summary.n > 0)
      row.ar_mean = av->at(Metric::ar_val).summary;
    if (const DeltaResult* d = ar->find_delta(c.variant); d && d->delta.n > 0) row.ar_estimate = d->delta;
  }
}

void score_interaction(ScoreRow& row, Unit& u, const PaperClaim& c, const PaperClaims& claims,
                       const ScorecardOptions& o) {
  const SweepAnalysis* a = analysis_of(u, c.factors.base, claims.metric, c.factors, o);
  if (!a) {
    row.detail = "not analysed: " + u.refused.at(analysis_key(c.factors.base, claims.metric, c.factors));
    return;
  }
  if (!a->interaction) {
    row.detail = a->no_interaction_reason;
    return;
  }
  row.estimate = estimate_of(a->interaction->result);
  row.method = a->interaction->result.method;
  row.seeds = a->interaction->result.n;
  if (row.sequential) row.sequence = sequence_of(*a, u, "interaction", o.level);
  decide(row, *c.value, o.level);
  // A spec without factors has analyze_sweep's default 2x2, the paper's.
  const Factors f = u.spec_factors.value_or(Factors{"ega", "mope", "ega_mope", "base"});
  // The loop's own look is reported only when it ran on the claim's 2x2.
  if (f.a == c.factors.a && f.b == c.factors.b && f.ab == c.factors.ab && f.base == c.factors.base)
    loop_look(row, u, "interaction", c.factors.base);
  // I is of the EGA family when any of its three variants' attention sees later keys.
  row.ega_family = sees_future(c.factors.a) || sees_future(c.factors.b) || sees_future(c.factors.ab);
  if (!row.ega_family) return;
  if (const SweepAnalysis* ar = analysis_of(u, c.factors.base, Metric::ar_val, c.factors, o);
      ar && ar->interaction)
    row.ar_estimate = estimate_of(ar->interaction->result);
}

// The learned MoPE pairs of the claim's variants.
std::vector<const MopeRun*> mope_runs(Unit& u, const PaperClaim& c, const ScorecardOptions& o) {
  if (!u.params) {
    // Once per unit, at the first MoPE claim that needs it: k-means makes it the costly part.
    std::vector<const CellData*> done;
    for (const CellData& cell : u.data.cells)
      if (cell.row.status == db::CellStatus::done) done.push_back(&cell);
    u.params = analyze_params(u.data, done, o.params, o.rng_seed);
  }
  std::vector<const MopeRun*> runs;
  for (const MopeRun& r : u.params->mope)
    // A run without learned pairs cannot speak to the claim.
    if (std::find(c.variants.begin(), c.variants.end(), r.variant) != c.variants.end() && !r.pairs.empty())
      runs.push_back(&r);
  return runs;
}

void score_boundary(ScoreRow& row, const std::vector<const MopeRun*>& runs, const PaperClaim& c, double tolerance,
                    double level) {
  std::vector<double> shares;
  std::size_t pairs = 0, on = 0, on0 = 0, with_init = 0;
  for (const MopeRun* r : runs) {
    std::size_t run_on = 0;
    for (const MopePair& p : r->pairs) {
      // The claim's boundary, with the analysis's relative tolerance (as param_analysis's on_boundary).
      const bool here = std::fabs(p.omega * p.sigma / c.boundary - 1.0) <= tolerance;
      run_on += here;
      if (p.has_init) {
        ++with_init;
        on0 += std::fabs(p.omega0 * p.sigma0 / c.boundary - 1.0) <= tolerance;
      }
    }
    pairs += r->pairs.size();
    on += run_on;
    // One share per run: the interval is over runs, the independent units, not over pairs.
    shares.push_back(static_cast<double>(run_on) / static_cast<double>(r->pairs.size()));
  }
  const stats::Summary s = stats::summarize(shares, level);
  // A share lies in [0, 1]; its t interval is clipped there (the verdict asks only whether it reaches 1).
  row.estimate = Estimate{s.mean, s.se, static_cast<double>(s.n) - 1, std::max(0.0, s.ci_low),
                          std::min(1.0, s.ci_high), s.has_interval, s.n};
  row.method = "per-run share of pairs on the boundary, t interval over runs clipped to [0, 1]";
  row.seeds = runs.size();
  row.detail = fmt::format("{} of {} pairs on omega*sigma = {:g} (within {:g}); at init {} of {}", on, pairs,
                           c.boundary, tolerance, on0, with_init);
  row.basis = on == pairs ? "every pair of every run" : fmt::format("{} t interval over runs", percent(level));
  // Every pair of every run on the boundary reproduces the claim outright, whatever the interval.
  if (on == pairs)
    row.verdict = ClaimVerdict::reproduced;
  else
    // Contradicted only when the interval's top stays below 1: "all pairs on it" is then ruled out.
    row.verdict = s.has_interval && s.ci_high < 1.0 ? ClaimVerdict::contradicted : ClaimVerdict::not_settled;
}

void score_clusters(ScoreRow& row, const std::vector<const MopeRun*>& runs, const PaperClaim& c, double level) {
  std::size_t clustered = 0, hits = 0;
  std::map<std::size_t, std::size_t> ks;
  for (const MopeRun* r : runs) {
    if (!r->clustered) continue;
    ++clustered;
    ++ks[r->clusters.gap_k];
    // A hit: the gap statistic chose the claimed number of clusters for this run.
    hits += r->clusters.gap_k == static_cast<std::size_t>(c.clusters);
  }
  row.seeds = clustered;
  if (clustered == 0) {
    row.verdict = ClaimVerdict::not_measured;
    row.detail = "no run had enough pairs to cluster";
    return;
  }
  // Clopper-Pearson: exact for a proportion, so valid with a handful of runs.
  const stats::ProportionInterval ci = stats::binomial_interval(hits, clustered, level);
  const double share = static_cast<double>(hits) / static_cast<double>(clustered);
  // A proportion has no se or df here: its interval is exact, not a t interval.
  row.estimate = Estimate{share, kNaN, kNaN, ci.low, ci.high, true, clustered};
  row.method = fmt::format("share of runs in which the gap statistic chose k = {}, exact binomial interval",
                           c.clusters);
  std::vector<std::string> counts;
  for (const auto& [k, n] : ks) counts.push_back(fmt::format("k = {} in {}", k, n));
  std::size_t regions = 0;  // of the paper's four, how many hold a pair in the median run
  std::vector<double> occupied;
  for (const MopeRun* r : runs) {
    regions = 0;
    // From 1: region 0 is "below one character", not one of the paper's four.
    for (std::size_t i = 1; i < r->regions.size(); ++i) regions += r->regions[i] > 0;
    occupied.push_back(static_cast<double>(regions));
  }
  // quantile_sorted needs sorted input: the median number of occupied regions over runs.
  std::sort(occupied.begin(), occupied.end());
  row.detail = fmt::format("gap statistic: {} of {} clustered runs; sigma regions holding a pair: median {:g} of 4",
                           fmt::join(counts, ", "), clustered, stats::quantile_sorted(occupied, 0.5));
  row.basis = fmt::format("{} exact binomial interval against 1/2", percent(level));
  // Reproduced when most runs find the claimed k (the interval above 1/2), contradicted when most do not.
  row.verdict = ci.low > 0.5 ? ClaimVerdict::reproduced
                : ci.high < 0.5 ? ClaimVerdict::contradicted
                                : ClaimVerdict::not_settled;
}

bool measures(const Unit& u, const PaperClaim& c) {
  for (const std::string& v : c.needs())
    // A MoPE claim holds for a unit with any of its variants; the other kinds need all of theirs.
    if (c.kind == ClaimKind::mope_boundary || c.kind == ClaimKind::mope_clusters) {
      if (u.measured.count(v)) return true;  // any one of the listed variants
    } else if (!u.measured.count(v)) {
      return false;
    }
  return c.kind != ClaimKind::mope_boundary && c.kind != ClaimKind::mope_clusters;
}

std::vector<Unit> load_units(db::ResultsDb& db, const PaperClaims& claims, const ScorecardOptions& o) {
  std::vector<std::string> names = o.sweeps;
  if (names.empty())
    // No sweeps named: every sweep list_sweeps shows by default.
    for (const db::SweepRow& s : db.list_sweeps()) names.push_back(s.name);
  const bool mope = std::any_of(claims.claims.begin(), claims.claims.end(), [](const PaperClaim& c) {
    return c.kind == ClaimKind::mope_boundary || c.kind == ClaimKind::mope_clusters;
  });
  std::vector<Unit> units;
  for (const std::string& name : names) {
    // Learned parameters are loaded only when a MoPE claim will read them.
    SweepData data = load_sweep(db, name, mope);
    const std::string sweep_name = data.sweep.name;  // `data` is moved into its units below
    std::map<std::string, db::LookRow> looks;
    // list_looks is ordered by look, so each claim keeps its last one.
    for (db::LookRow& l : db.list_looks(data.sweep.id)) looks[l.claim] = std::move(l);
    auto add = [&](SweepData d, std::string point) {
      Unit u;
      u.sweep = sweep_name;
      u.point = std::move(point);
      u.data = std::move(d);
      // The spec's own baseline and factors, kept before analysis_of overwrites data.spec.baseline.
      u.spec_baseline = u.data.spec.baseline;
      u.spec_factors = u.data.spec.factors;
      // Recorded looks mean the --until loop ran: verdicts then come from the sequence.
      u.sequential = !looks.empty();
      u.looks = looks;
      for (const CellData& c : u.data.cells)
        // What measures() asks: the variants with a finite value of the claims' metric.
        if (auto v = c.value(claims.metric); v && std::isfinite(*v)) u.measured.insert(c.row.variant);
      u.scale = scale_of(u.data);
      units.push_back(std::move(u));
    };
    if (has_grid(data)) {
      // Cells of different grid points never pair: each point is a unit of its own.
      for (GridPointData& p : split_grid_points(data))
        add(std::move(p.data), fmt::format("point {}: {}", p.index, p.label));
    } else {
      add(std::move(data), "");
    }
  }
  return units;
}

// ---- rendering ------------------------------------------------------------------------

std::string published_text(const PaperClaim& c) {
  switch (c.kind) {
    case ClaimKind::value:
      if (!c.delta) return fmt::format("{}", human::loss(*c.value));
      return fmt::format("{} (delta {}{})", human::loss(*c.value), human::signed_loss(*c.delta),
                         c.delta_quoted ? "" : ", derived");
    case ClaimKind::delta: return fmt::format("delta {} against {}", human::signed_loss(*c.delta), c.reference);
    case ClaimKind::interaction: return fmt::format("I = {}", human::signed_loss(*c.value));
    case ClaimKind::mope_clusters: return fmt::format("{} clusters", c.clusters);
    case ClaimKind::mope_boundary: return fmt::format("all pairs on omega*sigma = {:g}", c.boundary);
  }
  return "";
}

std::string estimate_text(const ScoreRow& r, const PaperClaim& c) {
  if (r.verdict == ClaimVerdict::not_measured && !r.estimate && !r.mean) return "-";
  std::string s;
  if (r.mean && r.mean->n > 0) s = "val " + human::mean_pm(*r.mean);
  if (r.estimate) {
    if (!s.empty()) s += "; ";
    const Estimate& e = *r.estimate;
    if (c.kind == ClaimKind::mope_boundary || c.kind == ClaimKind::mope_clusters)
      s += fmt::format("{:.3f} {}", e.estimate,
                       e.has_interval ? fmt::format("[{:.3f}, {:.3f}]", e.ci_low, e.ci_high) : "(no interval)");
    else
      s += fmt::format("{} {} {}", c.kind == ClaimKind::interaction ? "I" : "delta", human::signed_loss(e.estimate),
                       e.has_interval ? human::interval(e.ci_low, e.ci_high) : "(no interval)");
  }
  return s.empty() ? "-" : s;
}

std::string bound(double x) { return std::isfinite(x) ? fmt::format("{:+.4f}", x) : (x < 0 ? "-inf" : "+inf"); }

std::string sequence_text(const ScoreRow& r, const PaperClaim& c) {
  const bool mope = c.kind == ClaimKind::mope_boundary || c.kind == ClaimKind::mope_clusters;
  // "-" where a sequence was expected (a sequential sweep) but none could be formed.
  if (!r.sequence) return r.sequential && !mope && !r.sweep.empty() ? "-" : "";
  const ScoreSequence& q = *r.sequence;
  return fmt::format("[{}, {}] {} at {} seeds", bound(q.lower), bound(q.upper), q.decision, q.seeds);
}

std::string ar_text(const ScoreRow& r, const PaperClaim& c) {
  if (!r.ega_family) return "";
  std::string s;
  if (r.ar_mean) s = "val " + human::mean_pm(*r.ar_mean);
  if (r.ar_estimate) {
    if (!s.empty()) s += "; ";
    const Estimate& e = *r.ar_estimate;
    s += fmt::format("{} {} {}", c.kind == ClaimKind::interaction ? "I" : "delta", human::signed_loss(e.estimate),
                     e.has_interval ? human::interval(e.ci_low, e.ci_high) : "(no interval)");
  }
  return s.empty() ? "not measured" : s;
}

db::Value real(double x) { return std::isfinite(x) ? db::Value(x) : db::Value(); }
db::Value opt_real(const std::optional<double>& x) { return x ? real(*x) : db::Value(); }
db::Value text_or_null(const std::string& s) { return s.empty() ? db::Value() : db::Value(s); }

nlohmann::json jnum(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }
nlohmann::json estimate_json(const std::optional<Estimate>& e) {
  if (!e) return nullptr;
  // No interval, no bounds: null even where the struct holds a number.
  return {{"estimate", jnum(e->estimate)}, {"ci_low", e->has_interval ? jnum(e->ci_low) : nullptr},
          {"ci_high", e->has_interval ? jnum(e->ci_high) : nullptr}, {"n", e->n}};
}
nlohmann::json summary_json(const std::optional<stats::Summary>& s) {
  if (!s || s->n == 0) return nullptr;
  return {{"mean", jnum(s->mean)}, {"ci_low", s->has_interval ? jnum(s->ci_low) : nullptr},
          {"ci_high", s->has_interval ? jnum(s->ci_high) : nullptr}, {"n", s->n}};
}

// The text form: a block per claim (what it says, the published number, its note once), then a
// line per sweep that measured it and, indented, its sequence and autoregressive loss; narrow
// enough for a terminal, where the display table's ten columns are not.
std::string text_blocks(const Scorecard& card) {
  std::string s;
  // An index no claim has, so the first row opens a block.
  std::size_t last = card.claims.claims.size();
  for (const ScoreRow& r : card.rows) {
    const PaperClaim& c = card.claims.claims.at(r.claim);
    // Rows of one claim are adjacent; a new claim index starts its block.
    if (r.claim != last) {
      last = r.claim;
      s += fmt::format("{}: {}\n  published: {}\n", c.id, c.claim, published_text(c));
      if (!c.note.empty()) s += "  note: " + c.note + "\n";
    }
    const std::string verdict = claim_verdict_text(r.verdict, c.kind);
    // A claim no sweep measured: its one row says why.
    if (r.sweep.empty()) {
      s += fmt::format("  {}: {}\n", verdict, r.detail);
      continue;
    }
    s += fmt::format("  {}{} ({}), {} {}: {} -> {}\n", r.sweep, r.point.empty() ? "" : ", " + r.point,
                     r.scale.text(), r.seeds,
                     c.kind == ClaimKind::mope_boundary || c.kind == ClaimKind::mope_clusters ? "runs" : "seeds",
                     estimate_text(r, c), verdict);
    if (r.sequence) s += "      sequence: " + sequence_text(r, c) + "\n";
    if (r.ega_family) s += "      autoregressive: " + ar_text(r, c) + "\n";
    if (!r.detail.empty()) s += "      " + r.detail + "\n";
  }
  return s;
}

}  // namespace

const char* claim_verdict_text(ClaimVerdict verdict, ClaimKind kind) {
  const bool mope = kind == ClaimKind::mope_boundary || kind == ClaimKind::mope_clusters;
  switch (verdict) {
    case ClaimVerdict::reproduced: return mope ? "reproduced" : "reproduced in sign";
    case ClaimVerdict::contradicted: return "contradicted";
    case ClaimVerdict::not_settled: return "not settled";
    case ClaimVerdict::not_measured: return "not measured";
    case ClaimVerdict::reference: return "reference";
  }
  return "?";
}

std::string Scale::text() const {
  if (!known) return "unknown";
  return fmt::format("{}: {} layers, {} heads, d {}, T {}, B {}, {} steps", preset, n_layer, n_head, d_model, context,
                     batch, steps);
}

Scorecard build_scorecard(db::ResultsDb& db, const PaperClaims& claims, const ScorecardOptions& o) {
  stats::require_level(o.level);
  Scorecard card;
  card.claims = claims;
  card.level = o.level;
  card.database = db.path();
  std::vector<Unit> units;
  {
    db::Transaction snapshot(db.connection(), db::Transaction::Kind::deferred);  // one read snapshot
    units = load_units(db, claims, o);
  }
  for (std::size_t i = 0; i < claims.claims.size(); ++i) {
    const PaperClaim& c = claims.claims[i];
    bool any = false;
    for (Unit& u : units) {
      if (!measures(u, c)) continue;
      ScoreRow row;
      row.claim = i;
      row.sweep = u.sweep;
      row.point = u.point;
      row.scale = u.scale;
      row.sequential = u.sequential;
      switch (c.kind) {
        case ClaimKind::value:
        case ClaimKind::delta: score_delta(row, u, c, claims, o); break;
        case ClaimKind::interaction: score_interaction(row, u, c, claims, o); break;
        case ClaimKind::mope_boundary:
        case ClaimKind::mope_clusters: {
          const std::vector<const MopeRun*> runs = mope_runs(u, c, o);
          if (runs.empty()) continue;  // its MoPE runs recorded no learned pairs
          if (c.kind == ClaimKind::mope_boundary)
            score_boundary(row, runs, c, o.params.boundary_tolerance, o.level);
          else
            score_clusters(row, runs, c, o.level);
          break;
        }
      }
      any = true;
      card.rows.push_back(std::move(row));
    }
    // Every claim gets a row, so the scorecard also shows what is not measured.
    if (!any) {
      ScoreRow row;
      row.claim = i;
      row.detail = fmt::format("no sweep of this database has done cells of {}",
                               c.kind == ClaimKind::mope_boundary || c.kind == ClaimKind::mope_clusters
                                   ? fmt::format("any of {} with learned MoPE pairs", fmt::join(c.needs(), ", "))
                                   : fmt::format("every one of {}", fmt::join(c.needs(), ", ")));
      card.rows.push_back(std::move(row));
    }
  }
  // Refused analyses as notes: the claim's row says only "not analysed".
  for (const Unit& u : units)
    for (const auto& [key, why] : u.refused)
      card.notes.push_back(fmt::format("{}{}: not analysed ({}): {}", u.sweep, u.point.empty() ? "" : " " + u.point,
                                       key, why));
  return card;
}

db::Table scorecard_display_table(const Scorecard& card) {
  db::Table t;
  t.columns = {"claim", "published", "sweep", "scale", "seeds", "estimate", "sequence", "verdict", "autoregressive",
               "note"};
  for (const ScoreRow& r : card.rows) {
    const PaperClaim& c = card.claims.claims.at(r.claim);
    std::string note = r.detail;
    if (!c.note.empty()) note += (note.empty() ? "" : "; ") + c.note;
    std::string sweep = r.sweep.empty() ? "-" : r.sweep;
    if (!r.point.empty()) sweep += " (" + r.point + ")";
    t.rows.push_back({c.id + ": " + c.claim, published_text(c), sweep, r.sweep.empty() ? "-" : r.scale.text(),
                      r.sweep.empty() ? db::Value("-") : db::Value(static_cast<int64_t>(r.seeds)),
                      estimate_text(r, c), sequence_text(r, c), std::string(claim_verdict_text(r.verdict, c.kind)),
                      ar_text(r, c), note});
  }
  return t;
}

db::Table scorecard_number_table(const Scorecard& card) {
  db::Table t;
  t.columns = {"claim",      "kind",        "variant",      "reference",   "published_value", "published_delta",
               "delta_quoted", "sweep",     "grid_point",   "preset",      "n_layer",         "n_head",
               "d_model",    "context",     "batch",        "steps",       "seeds",           "mean",
               "mean_low",   "mean_high",   "estimate",     "ci_low",      "ci_high",         "method",
               "sequential", "seq_lower",   "seq_upper",    "seq_decision", "seq_p_anytime",  "verdict",
               "basis",      "ar_mean",     "ar_estimate",  "ar_ci_low",   "ar_ci_high",      "detail"};
  for (const ScoreRow& r : card.rows) {
    const PaperClaim& c = card.claims.claims.at(r.claim);
    // Scale fields only where a sweep's config was read: NULL, not zeros, otherwise.
    const bool scale = !r.sweep.empty() && r.scale.known;
    auto si = [&](int64_t x) { return scale ? db::Value(x) : db::Value(); };
    const bool mean = r.mean && r.mean->n > 0;
    const bool est = r.estimate.has_value();
    const bool ci = est && r.estimate->has_interval;
    const bool ar = r.ar_estimate.has_value();
    t.rows.push_back({c.id, std::string(claim_kind_name(c.kind)), text_or_null(c.variant),
                      text_or_null(c.reference), opt_real(c.value), opt_real(c.delta),
                      // delta_quoted as 0/1, and NULL where no delta exists at all.
                      c.delta ? db::Value(int64_t{c.delta_quoted}) : db::Value(), text_or_null(r.sweep),
                      text_or_null(r.point), scale ? db::Value(r.scale.preset) : db::Value(), si(r.scale.n_layer),
                      si(r.scale.n_head), si(r.scale.d_model), si(r.scale.context), si(r.scale.batch),
                      si(r.scale.steps), r.sweep.empty() ? db::Value() : db::Value(static_cast<int64_t>(r.seeds)),
                      mean ? real(r.mean->mean) : db::Value(),
                      mean && r.mean->has_interval ? real(r.mean->ci_low) : db::Value(),
                      mean && r.mean->has_interval ? real(r.mean->ci_high) : db::Value(),
                      est ? real(r.estimate->estimate) : db::Value(), ci ? real(r.estimate->ci_low) : db::Value(),
                      ci ? real(r.estimate->ci_high) : db::Value(), text_or_null(r.method),
                      db::Value(int64_t{r.sequential}), r.sequence ? real(r.sequence->lower) : db::Value(),
                      r.sequence ? real(r.sequence->upper) : db::Value(),
                      r.sequence ? db::Value(r.sequence->decision) : db::Value(),
                      r.sequence ? real(r.sequence->p_anytime) : db::Value(),
                      std::string(claim_verdict_text(r.verdict, c.kind)), text_or_null(r.basis),
                      r.ar_mean && r.ar_mean->n > 0 ? real(r.ar_mean->mean) : db::Value(),
                      ar ? real(r.ar_estimate->estimate) : db::Value(),
                      ar && r.ar_estimate->has_interval ? real(r.ar_estimate->ci_low) : db::Value(),
                      ar && r.ar_estimate->has_interval ? real(r.ar_estimate->ci_high) : db::Value(),
                      text_or_null(r.detail)});
  }
  return t;
}

nlohmann::json scorecard_json(const Scorecard& card) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ScoreRow& r : card.rows) {
    const PaperClaim& c = card.claims.claims.at(r.claim);
    nlohmann::json j = {{"claim", c.id},
                        {"kind", claim_kind_name(c.kind)},
                        {"text", c.claim},
                        {"published", {{"value", c.value ? jnum(*c.value) : nullptr},
                                       {"delta", c.delta ? jnum(*c.delta) : nullptr},
                                       {"delta_quoted", c.delta_quoted}}},
                        {"verdict", claim_verdict_text(r.verdict, c.kind)},
                        {"basis", r.basis},
                        {"detail", r.detail},
                        {"note", c.note}};
    if (!c.variant.empty()) j["variant"] = c.variant;
    if (!c.reference.empty()) j["reference"] = c.reference;
    if (r.sweep.empty()) {
      j["sweep"] = nullptr;
    } else {
      j["sweep"] = r.sweep;
      j["grid_point"] = r.point.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.point);
      j["scale"] = r.scale.known ? nlohmann::json{{"preset", r.scale.preset}, {"n_layer", r.scale.n_layer},
                                                  {"n_head", r.scale.n_head}, {"d_model", r.scale.d_model},
                                                  {"context", r.scale.context}, {"batch", r.scale.batch},
                                                  {"steps", r.scale.steps}}
                                 : nlohmann::json(nullptr);
      j["seeds"] = r.seeds;
      j["mean"] = summary_json(r.mean);
      j["estimate"] = estimate_json(r.estimate);
      j["method"] = r.method;
      j["sequential"] = r.sequential;
      j["sequence"] = r.sequence ? nlohmann::json{{"seeds", r.sequence->seeds}, {"estimate", jnum(r.sequence->estimate)},
                                                  {"lower", jnum(r.sequence->lower)}, {"upper", jnum(r.sequence->upper)},
                                                  {"p_anytime", jnum(r.sequence->p_anytime)},
                                                  {"decision", r.sequence->decision}}
                                 : nlohmann::json(nullptr);
      if (r.ega_family)
        j["autoregressive"] = {{"mean", summary_json(r.ar_mean)}, {"estimate", estimate_json(r.ar_estimate)}};
    }
    rows.push_back(std::move(j));
  }
  return {{"source", card.claims.source},
          {"published_scale", card.claims.published_scale},
          {"claims_file", card.claims.origin},
          {"metric", metric_name(card.claims.metric)},
          {"level", card.level},
          {"rows", std::move(rows)},
          {"notes", card.notes}};
}

ScorecardFormat parse_scorecard_format(std::string_view name) {
  constexpr const char* kNames[] = {"text", "markdown", "csv", "json"};  // in enum order
  return parse_enum<ScorecardFormat, ConfigError>(name, kNames, "format");
}

std::string render_scorecard(const Scorecard& card, ScorecardFormat format) {
  switch (format) {
    // CSV and JSON carry every number; text and Markdown share the header and notes below.
    case ScorecardFormat::csv: return db::format_table(scorecard_number_table(card), db::Format::csv);
    case ScorecardFormat::json: return scorecard_json(card).dump(2) + "\n";
    case ScorecardFormat::text:
    case ScorecardFormat::markdown: break;
  }
  const bool md = format == ScorecardFormat::markdown;
  // Verdict counts in the header line: a summary before the rows.
  std::map<std::string, std::size_t> verdicts;
  for (const ScoreRow& r : card.rows)
    ++verdicts[claim_verdict_text(r.verdict, card.claims.claims.at(r.claim).kind)];
  std::vector<std::string> counts;
  for (const auto& [v, n] : verdicts) counts.push_back(fmt::format("{} {}", n, v));
  const std::string para = md ? "\n\n" : "\n";
  std::string s = md ? "# The paper's claims, measured\n\n" : "the paper's claims, measured\n";
  s += fmt::format("published: {}; {}{}", card.claims.source, card.claims.published_scale, para);
  s += fmt::format("claims: {} ({} claims, {} rows: {}); {} intervals; metric {}\n", card.claims.origin,
                   card.claims.claims.size(), card.rows.size(), fmt::join(counts, ", "), percent(card.level),
                   metric_name(card.claims.metric));
  s += "\n" + (md ? markdown_table(scorecard_display_table(card)) + "\n" : text_blocks(card));
  s += "\nVerdicts are on the sign of each published delta (and I); absolute values are compared only through it, "
       "since a sweep need not run at the paper's scale. A sweep with looks is decided by its anytime-valid "
       "sequence, the others by the fixed-n t interval. Cells pair within one sweep (one grid point) only.\n";
  for (const std::string& n : card.notes) s += (md ? "- note: " : "note: ") + n + "\n";
  return s;
}

}  // namespace egm::analysis
