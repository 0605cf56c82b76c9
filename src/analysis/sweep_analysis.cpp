// analyze_sweep: summaries per variant and metric, deltas paired where the seeds
// allow, the 2x2 interaction, the published comparison, and the notes and refusals.
#include "analysis/sweep_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <set>

#include "analysis/table_cells.h"
#include "config/variants.h"
#include "stats/descriptive.h"
#include "stats/distributions.h"
#include "stats/multiple.h"
#include "stats/paired.h"
#include "stats/welch.h"
#include "util/error.h"

namespace egm::analysis {

namespace {

using cells::kNaN;

// Why a cell does not count for `metric`, or nullopt when it counts.
std::optional<std::string> exclusion_reason(const CellData& cell, Metric metric) {
  const db::CellRow& c = cell.row;
  switch (c.status) {
    case db::CellStatus::done:
      // Done, yet this metric was not measured (a NULL column): excluded with its own reason.
      if (cell.value(metric)) return std::nullopt;
      return fmt::format("done, but no {} recorded", metric_name(metric));
    case db::CellStatus::failed: {
      const std::string error = c.last_error ? ": " + *c.last_error : "";
      // Failures reaching max_attempts: the coordinator has given the cell up.
      if (c.failures >= c.max_attempts)
        return fmt::format("failed, out of retries ({}/{} attempts failed){}", c.failures, c.max_attempts, error);
      return fmt::format("failed, will be retried ({}/{} failures so far){}", c.failures, c.max_attempts, error);
    }
    case db::CellStatus::running: return fmt::format("running (attempt {})", c.attempts);
    case db::CellStatus::pending: return std::string("pending (not started)");
    case db::CellStatus::interrupted: return fmt::format("interrupted after {} attempt(s); will resume", c.attempts);
  }
  return std::string("unknown status");
}

// The values of `seeds` only; every one of them is in `values` (shared_seeds chose them), so at() cannot throw.
stats::SeedValues restrict_to(const stats::SeedValues& values, const std::vector<int64_t>& seeds) {
  stats::SeedValues out;
  for (int64_t s : seeds) out.emplace(s, values.at(s));
  return out;
}

Estimate from_summary(const stats::Summary& s) {
  Estimate e;
  e.estimate = s.mean;
  e.se = s.se;
  e.df = s.n >= 2 ? static_cast<double>(s.n - 1) : kNaN;  // one seed: no spread, so no t and no interval
  e.ci_low = s.ci_low;
  e.ci_high = s.ci_high;
  e.has_interval = s.has_interval;
  e.n = s.n;
  return e;
}

}  // namespace

Estimate from_contrast(const stats::ContrastResult& c, std::size_t n) {
  Estimate e;
  e.estimate = c.estimate;
  e.se = c.se;
  e.df = c.df;
  e.ci_low = c.ci_low;
  e.ci_high = c.ci_high;
  e.has_interval = c.has_interval;
  e.n = n;
  return e;
}

namespace {

// Shared by every comparison: which cell ran where, and the conflicts found.
class Setups {
 public:
  explicit Setups(const SweepData& data) {
    for (const auto& c : data.cells)
      // Keyed by (variant, seed), the way comparisons name their members.
      if (c.row.status == db::CellStatus::done) cells_[{c.row.variant, c.row.seed}] = &c;
  }
  // Records a conflict when the given cells (variant, seed) did not all run
  // with one setup (a cell resumed under another setup conflicts by itself).
  void require_same(const std::string& comparison, const std::vector<std::pair<std::string, int64_t>>& members) {
    std::set<RunSetup> distinct;
    std::set<std::pair<int, std::string>> worlds;
    std::set<std::string> devices;
    std::vector<std::string> parts;
    for (const auto& m : members) {
      auto it = cells_.find(m);
      // A member without a recorded setup (an older database) cannot conflict.
      if (it == cells_.end() || it->second->setups.empty()) continue;
      std::vector<std::string> texts;
      // Every setup the member ran with: a resumed cell can bring two.
      for (const auto& s : it->second->setups) {
        distinct.insert(s);
        worlds.insert({s.world_size, s.backend});
        // Devices by kind (cpu, cuda): two GPUs of one kind are one device.
        if (!s.device_kind.empty()) devices.insert(s.device_kind);
        texts.push_back(s.text());
      }
      parts.push_back(fmt::format("{}: {}", it->second->row.key, fmt::join(texts, " then ")));
    }
    // One setup across every member: nothing to report.
    if (distinct.size() <= 1) return;
    SetupConflict c{comparison, fmt::format("{}", fmt::join(parts, "; ")), worlds.size() > 1, devices.size() > 1};
    if (!c.mixed_world && !c.mixed_device) return;  // differing only in what one side did not record
    // The same conflict text is recorded once, however many comparisons meet it.
    const std::string id = c.comparison + "|" + c.detail;
    if (seen_.insert(id).second) conflicts_.push_back(std::move(c));
  }
  const std::vector<SetupConflict>& conflicts() const { return conflicts_; }

 private:
  std::map<std::pair<std::string, int64_t>, const CellData*> cells_;
  std::set<std::string> seen_;
  std::vector<SetupConflict> conflicts_;
};

// The (variant, seed) of every value in the groups: the cells an unpaired comparison rests on.
std::vector<std::pair<std::string, int64_t>> members_of(const std::vector<std::string>& variants,
                                                        const std::vector<const stats::SeedValues*>& groups) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < variants.size(); ++i)
    for (const auto& [seed, value] : *groups[i]) out.emplace_back(variants[i], seed);
  return out;
}

// The seeds every group has, ascending (the first group's order).
std::vector<int64_t> shared_seeds(const std::vector<const stats::SeedValues*>& groups) {
  std::vector<int64_t> shared;
  // Walking the first group keeps the result ascending (SeedValues is ordered by seed).
  for (const auto& [seed, value] : *groups.front()) {
    bool everywhere = true;
    for (const auto* g : groups) everywhere = everywhere && g->count(seed);
    if (everywhere) shared.push_back(seed);
  }
  return shared;
}

// Seeds some group has and another lacks: a paired comparison leaves them out and says so.
std::vector<int64_t> unmatched_seeds(const std::vector<const stats::SeedValues*>& groups,
                                     const std::vector<int64_t>& shared) {
  std::set<int64_t> all;
  for (const auto* g : groups)
    for (const auto& [seed, value] : *g) all.insert(seed);
  std::vector<int64_t> out;
  for (int64_t s : all)
    // shared is ascending (shared_seeds walks an ordered map), as binary_search needs.
    if (!std::binary_search(shared.begin(), shared.end(), s)) out.push_back(s);
  return out;
}

// Pair by seed when the groups share at least two seeds, or are one and the
// same single seed (then there is a difference but no interval).
bool pairable(const std::vector<const stats::SeedValues*>& groups, const std::vector<int64_t>& shared) {
  if (shared.size() >= 2) return true;
  if (shared.size() != 1) return false;
  // One shared seed pairs only when it is every group's only seed; else Welch over all the values says more.
  return std::all_of(groups.begin(), groups.end(), [](const stats::SeedValues* g) { return g->size() == 1; });
}

std::string seed_list(const std::vector<int64_t>& seeds) { return fmt::format("{}", fmt::join(seeds, ", ")); }

DeltaResult compare_with_baseline(const std::string& baseline, const stats::SeedValues& base,
                                  const std::string& variant, const stats::SeedValues& values, Metric metric,
                                  double level, Setups& setups) {
  DeltaResult d;
  d.variant = variant;
  d.metric = metric;
  const std::vector<const stats::SeedValues*> groups{&base, &values};
  const std::vector<int64_t> shared = shared_seeds(groups);
  const std::string comparison = fmt::format("delta({})", variant);
  if (pairable(groups, shared)) {
    d.paired = true;
    d.seeds = shared;
    d.unmatched_seeds = unmatched_seeds(groups, shared);
    // x - y with x = baseline, y = variant: positive = the variant is better.
    const stats::PairedResult r = stats::paired_compare(restrict_to(base, shared), restrict_to(values, shared), level);
    d.per_seed = r.differences;
    d.delta = from_summary(r.difference);
    d.p = r.p_t;
    d.has_wilcoxon = true;
    d.wilcoxon = r.wilcoxon;
    // Each shared seed's pair must have run with one setup, or the difference carries a setup effect.
    for (int64_t s : shared)
      setups.require_same(fmt::format("{} seed {}", comparison, s), {{baseline, s}, {variant, s}});
    if (shared.size() == 1) {
      d.method = "one seed: the difference has no interval";
    } else {
      d.method = fmt::format("paired over {} shared seeds (t, df {}; Wilcoxon signed-rank, {})", shared.size(),
                             shared.size() - 1, stats::wilcoxon_method_name(r.wilcoxon.method));
    }
    // Seeds only one side ran are named in the method, so the n is explained.
    if (!d.unmatched_seeds.empty())
      d.method += fmt::format("; seeds without a partner not used: {}", seed_list(d.unmatched_seeds));
  } else {
    // Seeds differ: Welch over every value of each side, unpaired.
    const stats::WelchResult w = stats::welch_test(stats::values_of(base), stats::values_of(values), level);
    // n is the smaller side's count: the fewest values the interval rests on.
    d.delta = from_contrast(w.difference, std::min(base.size(), values.size()));
    d.p = w.difference.p;
    setups.require_same(comparison, members_of({baseline, variant}, groups));
    d.method = w.difference.has_interval
                   ? fmt::format("Welch, seeds differ ({} n={}, {} n={}; df {:.2f})", baseline, base.size(), variant,
                                 values.size(), w.difference.df)
                   : fmt::format("seeds differ and a side has one seed: no interval ({} n={}, {} n={})", baseline,
                                 base.size(), variant, values.size());
  }
  // No interval, no test: a NaN p keeps the delta out of Holm's family (compare()).
  if (!d.delta.has_interval) d.p = kNaN;
  return d;
}

struct MetricComparisons {
  std::vector<DeltaResult> deltas;
  std::optional<InteractionAnalysis> interaction;
  std::string no_interaction_reason;
};

const stats::SeedValues* values_for(const std::vector<VariantSummary>& variants, const std::string& name,
                                    Metric metric) {
  for (const auto& v : variants)
    // A variant with no value of this metric counts as absent.
    if (v.variant == name) return v.at(metric).by_seed.empty() ? nullptr : &v.at(metric).by_seed;
  return nullptr;
}

std::optional<InteractionAnalysis> interaction_on(const std::vector<VariantSummary>& variants, const Factors& f,
                                                  Metric metric, const AnalysisOptions& o, Setups& setups,
                                                  std::string& why_not) {
  const std::vector<std::string> names{f.base, f.a, f.b, f.ab};
  std::vector<const stats::SeedValues*> groups;
  for (const auto& name : names) {
    const stats::SeedValues* g = values_for(variants, name, metric);
    if (!g) {
      // All four variants need a value of the metric; the reason is reported when one lacks it.
      why_not = fmt::format("variant {} has no done cell with {}", name, metric_name(metric));
      return std::nullopt;
    }
    groups.push_back(g);
  }
  InteractionAnalysis ia;
  ia.factors = f;
  ia.metric = metric;
  stats::InteractionOptions io;
  io.level = o.level;
  io.bootstrap_resamples = o.bootstrap_resamples;
  // The bootstrap draws from the analysis's rng seed, so a rerun gives the same interval.
  io.bootstrap_seed = o.rng_seed;
  const std::vector<int64_t> shared = shared_seeds(groups);
  if (pairable(groups, shared)) {
    ia.unmatched_seeds = unmatched_seeds(groups, shared);
    std::vector<stats::SeedValues> r;
    // Only the shared seeds, so all four cells pair on each of them.
    for (const auto* g : groups) r.push_back(restrict_to(*g, shared));
    ia.result = stats::interaction_2x2(r[0], r[1], r[2], r[3], io);
    for (int64_t s : shared)
      setups.require_same(fmt::format("interaction seed {}", s),
                          {{f.base, s}, {f.a, s}, {f.b, s}, {f.ab, s}});
    // delta(a) + delta(b) per seed = 2 base - a - b.
    std::vector<double> sums;
    for (int64_t s : shared) sums.push_back(2.0 * r[0].at(s) - r[1].at(s) - r[2].at(s));
    // Reported beside I: the two gains added, to set against the gain of both together.
    ia.sum_of_parts = from_summary(stats::paired_compare_differences(sums, o.level).difference);
    if (!ia.unmatched_seeds.empty())
      ia.result.method += fmt::format("; seeds missing from some cell not used: {}", seed_list(ia.unmatched_seeds));
  } else {
    // Seeds differ: I as a Welch-Satterthwaite contrast of the four cell means (interaction_2x2).
    ia.result = stats::interaction_2x2(*groups[0], *groups[1], *groups[2], *groups[3], io);
    setups.require_same("interaction", members_of(names, groups));
    // The same sum of parts, 2 base - a - b, as a contrast of the three groups' means (seeds differ).
    const stats::ContrastResult c = stats::satterthwaite_interval(
        {2.0, -1.0, -1.0}, {stats::values_of(*groups[0]), stats::values_of(*groups[1]), stats::values_of(*groups[2])},
        o.level);
    ia.sum_of_parts = from_contrast(c, std::min({groups[0]->size(), groups[1]->size(), groups[2]->size()}));
  }
  // The sentence quotes the level, so it matches the interval reported.
  ia.verdict_text = verdict_sentence(ia.result.verdict, o.level);
  return ia;
}

MetricComparisons compare(const std::vector<VariantSummary>& variants, const std::string& baseline,
                          const std::optional<Factors>& factors, Metric metric, const AnalysisOptions& o,
                          Setups& setups) {
  MetricComparisons m;
  // No baseline, or a baseline without values of the metric: no deltas at all.
  if (const stats::SeedValues* base = baseline.empty() ? nullptr : values_for(variants, baseline, metric)) {
    for (const auto& v : variants) {
      // The baseline has no delta against itself, and a variant without values has nothing to compare.
      if (v.variant == baseline || v.at(metric).by_seed.empty()) continue;
      m.deltas.push_back(compare_with_baseline(baseline, *base, v.variant, v.at(metric).by_seed, metric, o.level,
                                               setups));
    }
    // Holm over the variants that have a p-value: a delta without an interval is no test, so it does not
    // count toward the family's size (it would only make the others' adjustment stricter).
    std::vector<double> raw;
    for (const auto& d : m.deltas)
      if (!std::isnan(d.p)) raw.push_back(d.p);
    const std::vector<double> adjusted = raw.empty() ? std::vector<double>{} : stats::holm_adjust(raw);
    size_t next = 0;
    // adjusted is in raw's order: the deltas that have a p, in turn.
    for (auto& d : m.deltas) d.p_holm = std::isnan(d.p) ? kNaN : adjusted[next++];
  }
  if (factors)
    m.interaction = interaction_on(variants, *factors, metric, o, setups, m.no_interaction_reason);
  else
    m.no_interaction_reason =
        "no 2x2 factors: the spec names none and the sweep lacks one of ega, mope, ega_mope, base "
        "(give --factors a,b,ab,base)";
  return m;
}

// Closed: a published value on a bound of our interval counts as inside.
bool inside(double x, double low, double high) { return x >= low && x <= high; }

// The refusal names at most 12 comparisons (enough to see the pattern) and counts the rest.
std::string device_refusal(const std::vector<SetupConflict>& conflicts) {
  std::string lines;
  size_t n = 0;
  for (const auto& c : conflicts)
    // n counts every device conflict; only the first 12 are listed.
    if (c.mixed_device && n++ < 12) lines += fmt::format("\n  {}: {}", c.comparison, c.detail);
  if (n > 12) lines += fmt::format("\n  ... and {} more", n - 12);
  return fmt::format(
      "refusing to pair cells that ran on different devices ({} comparisons):{}\n"
      "A CUDA run draws its dropout from another generator and runs other kernels than the CPU run of the same "
      "seed, so such pairs mix a device effect into the deltas. Rerun the cells on one device kind, or pass "
      "--allow-mixed-device to pair them anyway (the conflicts are then listed as warnings).",
      n, lines);
}

std::string setup_refusal(const std::vector<SetupConflict>& all) {
  std::vector<SetupConflict> conflicts;
  for (const auto& c : all)
    if (c.mixed_world) conflicts.push_back(c);
  std::string lines;
  const size_t shown = std::min<size_t>(conflicts.size(), 12);
  for (size_t i = 0; i < shown; ++i) lines += fmt::format("\n  {}: {}", conflicts[i].comparison, conflicts[i].detail);
  if (conflicts.size() > shown) lines += fmt::format("\n  ... and {} more", conflicts.size() - shown);
  return fmt::format(
      "refusing to pair cells that ran with different world sizes or backends ({} comparisons):{}\n"
      "A data-parallel run is not bitwise the same computation as a single-rank one, so such pairs mix a setup "
      "effect into the deltas. Rerun the cells with one setup, or pass --allow-mixed-world-size to pair them "
      "anyway (the conflicts are then listed as warnings).",
      conflicts.size(), lines);
}

}  // namespace

std::string percent(double level) { return fmt::format("{:g}%", level * 100.0); }

const char* verdict_label(stats::Verdict verdict) {
  switch (verdict) {
    case stats::Verdict::superadditive: return "superadditive";
    case stats::Verdict::additive_consistent: return "additive-consistent";
    case stats::Verdict::subadditive: return "subadditive";
    case stats::Verdict::no_interval: return "no interval";
  }
  return "?";
}

std::string verdict_sentence(stats::Verdict verdict, double level) {
  const std::string p = percent(level);
  switch (verdict) {
    case stats::Verdict::superadditive:
      return fmt::format("superadditive: the {} interval of I lies above 0 (both together help more than the sum "
                         "of the two gains)",
                         p);
    case stats::Verdict::additive_consistent:
      return fmt::format("additive-consistent: the {} interval of I includes 0 (no evidence that the gains "
                         "interact)",
                         p);
    case stats::Verdict::subadditive:
      return fmt::format("subadditive: the {} interval of I lies below 0 (both together help less than the sum "
                         "of the two gains)",
                         p);
    case stats::Verdict::no_interval:
      return "no verdict: with one seed no interval exists (run more seeds)";
  }
  return "?";
}

const VariantSummary* SweepAnalysis::find_variant(const std::string& name) const {
  for (const auto& v : variants)
    if (v.variant == name) return &v;
  return nullptr;
}

const DeltaResult* SweepAnalysis::find_delta(const std::string& variant) const {
  for (const auto& d : deltas)
    if (d.variant == variant) return &d;
  return nullptr;
}

namespace {

// Variants in spec order, then any the cells name that the spec does not.
std::vector<std::string> variant_names(const SweepData& data) {
  std::vector<std::string> names = data.spec.variants;
  for (const auto& c : data.cells)
    if (std::find(names.begin(), names.end(), c.row.variant) == names.end()) names.push_back(c.row.variant);
  return names;
}

// One variant's summary over the seeds of its done cells, for every metric.
VariantSummary summarize_variant(const SweepData& data, const std::string& name, const AnalysisOptions& o) {
  VariantSummary v;
  v.variant = name;
  // "?" until the name resolves: a variant this build does not know still gets its statistics.
  v.attention = v.position = "?";
  try {
    const VariantInfo info = resolve_variant(name);
    v.attention = info.attention;
    v.position = info.position;
  } catch (const ConfigError&) {
    // A name this build does not know: the statistics do not need it.
  }
  for (Metric m : all_metrics()) {
    MetricSummary s;
    s.metric = m;
    for (const auto& c : data.cells) {
      if (c.row.variant != name || c.row.status != db::CellStatus::done) continue;
      const std::optional<double> value = c.value(m);
      // A non-finite value (a diverged run) stays out of the summary; count_used_cells lists it as excluded.
      if (!value || !std::isfinite(*value)) continue;
      s.by_seed[c.row.seed] = *value;
      for (const auto& setup : c.setups)
        // Per metric: the setups that metric's values came from, each once.
        if (std::find(s.setups.begin(), s.setups.end(), setup) == s.setups.end()) s.setups.push_back(setup);
    }
    if (!s.by_seed.empty()) s.summary = stats::summarize(stats::values_of(s.by_seed), o.level);
    v.metrics.push_back(std::move(s));
  }
  return v;
}

// cells_used, and every other cell in `excluded` with the reason; a note for
// values a database edited elsewhere stored as text or blobs (read as missing).
void count_used_cells(const SweepData& data, const AnalysisOptions& o, SweepAnalysis& a) {
  for (const auto& c : data.cells) {
    // Used only when finite, as summarize_variant counts it; a non-finite value is excluded with a reason.
    if (std::optional<std::string> why = exclusion_reason(c, o.metric))
      a.excluded.push_back({c.row.key, c.row.variant, c.row.seed, db::to_string(c.row.status), *why});
    else if (std::isfinite(*c.value(o.metric)))
      ++a.cells_used;
    else
      a.excluded.push_back({c.row.key, c.row.variant, c.row.seed, db::to_string(c.row.status),
                            fmt::format("done, but {} is not finite", metric_name(o.metric))});
  }
  int non_numeric = 0;
  // A REAL column holding text or a blob reads as missing; counted here so the note can say how often.
  for (const auto& c : data.cells) non_numeric += c.row.non_numeric;
  if (non_numeric > 0)
    a.notes.push_back(fmt::format("{} stored measurement(s) were neither numbers nor NULL (text or a blob in a REAL "
                                  "column: was the database edited elsewhere?) and were read as missing",
                                  non_numeric));
}

// The 2x2's factors: --factors (each must be a variant), else the spec's, else
// the paper's names when the sweep has all four.
std::optional<Factors> choose_factors(const SweepData& data, const AnalysisOptions& o,
                                      const std::vector<std::string>& names, const std::string& sweep) {
  // --factors wins over the spec's, so one sweep can be read as another 2x2.
  std::optional<Factors> factors = o.factors ? o.factors : data.spec.factors;
  if (!factors) {
    // The paper's 2x2 by its variant names, taken when the sweep has all four.
    const Factors paper{"ega", "mope", "ega_mope", "base"};
    bool all = true;
    for (const auto& n : {paper.a, paper.b, paper.ab, paper.base})
      all = all && std::find(names.begin(), names.end(), n) != names.end();
    if (all) factors = paper;
  }
  // A --factors typo is refused here; otherwise it would surface only as "no done cell" later.
  if (o.factors)
    for (const auto& n : {o.factors->a, o.factors->b, o.factors->ab, o.factors->base})
      EGM_REQUIRE(std::find(names.begin(), names.end(), n) != names.end(), ConfigError,
                  "--factors names '{}', which is not a variant of sweep {} (variants: {})", n, sweep,
                  fmt::join(names, ", "));
  return factors;
}

// The spec's published numbers beside ours: each variant's value (inside our
// interval? our prediction interval for one more seed?), its delta, and the interaction.
PublishedComparison compare_published(const spec::Published& pub, const SweepAnalysis& a,
                                      const std::optional<Factors>& factors, const AnalysisOptions& o,
                                      Setups& setups) {
  PublishedComparison pc;
  pc.source = pub.source;
  pc.metric = parse_metric(pub.metric);  // the spec names a cells column; ConfigError for one egm does not know
  MetricComparisons other;
  const bool same_metric = pc.metric == o.metric;
  // The published numbers are of another metric: comparisons on it, kept apart from the main ones.
  if (!same_metric) other = compare(a.variants, a.baseline, factors, pc.metric, o, setups);
  const std::vector<DeltaResult>& deltas = same_metric ? a.deltas : other.deltas;
  const std::optional<InteractionAnalysis>& interaction = same_metric ? a.interaction : other.interaction;
  // The published baseline, for the published deltas below.
  const auto base_published = pub.values.find(a.baseline);
  for (const auto& v : a.variants) {
    auto it = pub.values.find(v.variant);
    // A variant the paper does not report has no row.
    if (it == pub.values.end()) continue;
    PublishedRow row;
    row.variant = v.variant;
    row.published = it->second;
    row.ours = v.at(pc.metric).summary;
    row.has_interval = row.ours.has_interval;
    row.prediction_low = row.prediction_high = kNaN;
    // Inside or not only with an interval: one seed decides neither.
    if (row.has_interval) {
      row.inside_ci = inside(row.published, row.ours.ci_low, row.ours.ci_high);
      // One more seed's value falls within mean +- t sd sqrt(1 + 1/n) (a prediction interval).
      // t_crit has the summary's n - 1 degrees of freedom, as the prediction interval for one new value needs.
      const double half = row.ours.t_crit * row.ours.sd * std::sqrt(1.0 + 1.0 / static_cast<double>(row.ours.n));
      row.prediction_low = row.ours.mean - half;
      row.prediction_high = row.ours.mean + half;
      row.inside_prediction = inside(row.published, row.prediction_low, row.prediction_high);
    }
    if (base_published != pub.values.end() && v.variant != a.baseline) {
      // In the same sense as ours: baseline minus variant, positive = better.
      row.published_delta = base_published->second - row.published;
      for (const auto& d : deltas)
        if (d.variant == v.variant) {
          row.our_delta = d.delta;
          row.delta_inside = d.delta.has_interval && inside(*row.published_delta, d.delta.ci_low, d.delta.ci_high);
        }
    }
    pc.rows.push_back(std::move(row));
  }
  if (factors) {
    const Factors& f = *factors;
    auto value = [&](const std::string& n) { return pub.values.find(n); };
    // The published I only when the paper reports all four cells.
    if (value(f.a) != pub.values.end() && value(f.b) != pub.values.end() && value(f.ab) != pub.values.end() &&
        value(f.base) != pub.values.end()) {
      // I = A + B - AB - base on the published numbers.
      pc.published_interaction = value(f.a)->second + value(f.b)->second - value(f.ab)->second -
                                 value(f.base)->second;
      pc.our_interaction = interaction;
      if (interaction && interaction->result.interval.has_interval)
        pc.interaction_inside = inside(*pc.published_interaction, interaction->result.interval.ci_low,
                                       interaction->result.interval.ci_high);
    }
  }
  return pc;
}

// Workers measure gate_open_share at each eval (GPTImpl::gate_open_shares); runs
// recorded before that have only tau and alpha.
void note_missing_gate_share(ParamAnalysis& params) {
  const auto& gates = params.gates;
  const bool has_ega = std::any_of(gates.begin(), gates.end(), [](const GateParamStat& g) { return g.module == "ega"; });
  const bool has_share = std::any_of(gates.begin(), gates.end(), [](const GateParamStat& g) {
    return g.module == "ega" && g.name == "gate_open_share";
  });
  if (has_ega && !has_share)
    params.notes.push_back(
        "the share of keys above the EGA gate threshold (gate_open_share) was not recorded for these runs; "
        "runs trained by this version record it at every eval");
}

// The intervals and sequences assume Gaussian per-seed contrasts; strongly
// skewed ones (stats::strongly_skewed: |G1| > 2 se from 5 seeds) can push
// the sequences past alpha (src/stats/README.md, "Assumptions"): said per claim.
void note_skewed_contrasts(SweepAnalysis& a) {
  auto skew_note = [&](const std::string& claim, const std::vector<double>& contrasts) {
    if (!stats::strongly_skewed(contrasts)) return;
    a.notes.push_back(fmt::format(
        "{}: its {} per-seed contrasts are strongly skewed (sample skewness {:+.2f}, more than twice its standard "
        "error {:.2f} under normality); the t intervals and the anytime-valid sequences assume Gaussian contrasts "
        "and may cover less than they say (src/stats/README.md)",
        claim, contrasts.size(), stats::sample_skewness(contrasts), stats::skewness_standard_error(contrasts.size())));
  };
  for (const DeltaResult& d : a.deltas)
    if (d.paired) skew_note(fmt::format("delta({})", d.variant), d.per_seed);
  if (a.interaction && a.interaction->result.paired) skew_note("interaction", a.interaction->result.per_seed);
}

}  // namespace

SweepAnalysis analyze_sweep(const SweepData& data, const AnalysisOptions& o) {
  stats::require_level(o.level);
  SweepAnalysis a;
  a.sweep = data.sweep.name;
  a.description = data.spec.description;
  a.metric = o.metric;
  a.level = o.level;
  a.rng_seed = o.rng_seed;
  a.cells_total = data.cells.size();
  const std::vector<std::string> names = variant_names(data);
  // Every variant is summarised, even one without a done cell (n = 0).
  for (const auto& name : names) a.variants.push_back(summarize_variant(data, name, o));

  std::vector<const CellData*> done;
  for (const auto& c : data.cells)
    if (c.row.status == db::CellStatus::done) done.push_back(&c);
  // The learned parameters on a thread of their own, beside the rest: they
  // read only `data` and `done`, and their numbers depend only on them and
  // the options (their own RNG seeds), so the result is the same.
  // Declared after `done`: on a throw below, the future's destructor waits for the thread before `done` goes.
  std::future<ParamAnalysis> params;
  if (o.analyse_params)
    params = std::async(std::launch::async, [&data, &done, &o] {
      return analyze_params(data, done, o.params, o.rng_seed);
    });
  count_used_cells(data, o, a);

  // Baseline and factors.
  // The spec's baseline, else the paper's, "base", when the sweep has it.
  if (data.spec.baseline)
    a.baseline = *data.spec.baseline;
  else if (std::find(names.begin(), names.end(), "base") != names.end())
    a.baseline = "base";
  if (a.baseline.empty()) a.notes.push_back("no baseline (the spec names none and there is no variant 'base'): no deltas");
  const std::optional<Factors> factors = choose_factors(data, o, names, a.sweep);

  Setups setups(data);
  MetricComparisons main = compare(a.variants, a.baseline, factors, o.metric, o, setups);
  a.deltas = std::move(main.deltas);
  a.interaction = std::move(main.interaction);
  a.no_interaction_reason = std::move(main.no_interaction_reason);
  // Published numbers are compared only when the spec carries them.
  if (data.spec.published) a.published = compare_published(*data.spec.published, a, factors, o, setups);

  a.setup_conflicts = setups.conflicts();
  const bool mixed_world = std::any_of(a.setup_conflicts.begin(), a.setup_conflicts.end(),
                                       [](const SetupConflict& c) { return c.mixed_world; });
  const bool mixed_device = std::any_of(a.setup_conflicts.begin(), a.setup_conflicts.end(),
                                        [](const SetupConflict& c) { return c.mixed_device; });
  // Refused after every comparison ran, so the message lists all the conflicts at once.
  if (mixed_world && !o.allow_mixed_setups) EGM_THROW(ConfigError, "{}", setup_refusal(a.setup_conflicts));
  if (mixed_device && !o.allow_mixed_devices) EGM_THROW(ConfigError, "{}", device_refusal(a.setup_conflicts));
  // Past the refusals: which of the comparisons that ran mix code versions.
  a.provenance = provenance_mixes(data, a);
  a.reused = data.reused;

  if (o.analyse_params) {
    // get() also rethrows an exception from the thread, here on the caller's.
    a.params = params.get();
    note_missing_gate_share(a.params);
  }
  note_skewed_contrasts(a);
  return a;
}

SweepAnalysis analyze_sweep(db::ResultsDb& db, const std::string& sweep, const AnalysisOptions& options) {
  return analyze_sweep(load_sweep(db, sweep), options);
}

}  // namespace egm::analysis
