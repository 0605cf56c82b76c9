// egm plan: each claim's pilot contrasts, the seeds for its half-width and its
// power, the cells and compute that adds, as text and tables.
#include "analysis/plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/grid_analysis.h"
#include "stats/descriptive.h"
#include "stats/power.h"
#include "util/error.h"

namespace egm::analysis {
namespace {

constexpr double kPlanNaN = std::numeric_limits<double>::quiet_NaN();

void check_options(const PlanOptions& o) {
  EGM_REQUIRE(o.half_width || o.effect, ConfigError,
              "egm plan needs a goal: --half-width H (an interval of +-H) and/or --effect E (to detect with --power)");
  EGM_REQUIRE(!o.half_width || (std::isfinite(*o.half_width) && *o.half_width > 0), ConfigError,
              "--half-width must be > 0, got {}", o.half_width.value_or(0));
  EGM_REQUIRE(!o.effect || (std::isfinite(*o.effect) && *o.effect != 0), ConfigError,
              "--effect must be nonzero, got {}", o.effect.value_or(0));
  // Below 0.5, as the confidence sequences of --until require (claim_sequences).
  EGM_REQUIRE(o.alpha > 0 && o.alpha < 0.5, ConfigError, "--alpha must lie strictly between 0 and 0.5, got {}",
              o.alpha);
  EGM_REQUIRE(o.power > o.alpha && o.power < 1, ConfigError, "--power must lie strictly between alpha and 1, got {}",
              o.power);
}

// A claim's per-seed contrasts as `egm analyze` formed them.
struct ClaimData {
  Claim claim;
  bool paired = false;
  std::vector<double> per_seed;
  std::string unpaired_reason;
};

std::vector<ClaimData> claim_data(const SweepAnalysis& a) {
  std::vector<ClaimData> out;
  // claims_of names the deltas in order, then the interaction: walking both lists in step pairs each
  // claim with its contrasts.
  const std::vector<Claim> claims = claims_of(a);
  std::size_t next = 0;
  for (const DeltaResult& d : a.deltas) {
    ClaimData c{claims[next++], d.paired, d.per_seed, ""};
    if (!d.paired) c.unpaired_reason = "its cells share fewer than 2 seeds with the baseline's (not paired)";
    out.push_back(std::move(c));
  }
  if (a.interaction) {
    const stats::InteractionResult& r = a.interaction->result;
    ClaimData c{claims[next++], r.paired, r.per_seed, ""};
    if (!r.paired) c.unpaired_reason = "its four cells share fewer than 2 seeds (not paired)";
    out.push_back(std::move(c));
  }
  return out;
}

// "ega" and "delta(ega)" name the same claim.
std::string claim_key(const std::string& name) {
  // rfind at 0 is "starts with": an already full name is kept.
  if (name == "interaction" || name.rfind("delta(", 0) == 0) return name;
  return fmt::format("delta({})", name);
}

std::vector<ClaimData> select_claims(std::vector<ClaimData> all, const SweepAnalysis& a,
                                     const std::vector<std::string>& wanted) {
  if (wanted.empty()) return all;
  std::vector<ClaimData> out;
  for (const std::string& w : wanted) {
    const std::string key = claim_key(w);
    auto it = std::find_if(all.begin(), all.end(), [&](const ClaimData& c) { return c.claim.name == key; });
    if (it == all.end()) {
      if (key == "interaction")
        EGM_THROW(ConfigError, "claim 'interaction': sweep '{}' has no 2x2 interaction ({})", a.sweep,
                  a.no_interaction_reason.empty() ? "no factors" : a.no_interaction_reason);
      std::vector<std::string> names;
      for (const ClaimData& c : all) names.push_back(c.claim.name);
      // The error lists the claims the sweep can form, so the name is easy to correct.
      EGM_THROW(ConfigError, "unknown claim '{}' for sweep '{}': it can form {}", w, a.sweep,
                names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
    }
    out.push_back(*it);
  }
  return out;
}

}  // namespace

// Both goals must hold, so the larger count; nullopt when neither could be computed.
std::optional<std::size_t> ClaimPlan::seeds() const {
  if (!seeds_for_half_width && !seeds_for_power) return std::nullopt;
  return std::max(seeds_for_half_width.value_or(0), seeds_for_power.value_or(0));
}

SweepPlan plan_from_analysis(const SweepData& data, const SweepAnalysis& a, const ComputeStatement& compute,
                             const PlanOptions& o) {
  check_options(o);
  SweepPlan plan;
  plan.sweep = a.sweep;
  plan.alpha = o.alpha;
  plan.adjustment = o.adjustment;
  plan.half_width = o.half_width;
  plan.effect = o.effect;
  plan.power = o.power;
  const std::vector<ClaimData> claims = select_claims(claim_data(a), a, o.claims);
  EGM_REQUIRE(!claims.empty(), ConfigError, "sweep '{}' has no claim to plan: no baseline to compare with and no "
              "2x2 factors", a.sweep);
  const double alpha = stats::per_claim_alpha(o.alpha, claims.size(), o.adjustment);
  // --until's family: every claim the analysis forms, Bonferroni (the loop's default).
  plan.until_claims = claims_of(a).size();
  plan.until_claim_alpha =
      stats::per_claim_alpha(o.alpha, std::max<std::size_t>(plan.until_claims, 1), stats::Adjustment::bonferroni);
  {
    stats::TMixtureOptions t;
    t.alpha = plan.until_claim_alpha;
    // Below this many seeds --until's sequences are unbounded at that alpha: no claim can settle sooner.
    plan.until_first_bounded = stats::t_mixture_first_bounded(t);
  }
  for (const ClaimData& c : claims) {
    ClaimPlan p;
    p.name = c.claim.name;
    p.variants = c.claim.variants;
    p.paired = c.paired;
    p.claim_alpha = alpha;
    // An unpaired claim has no per-seed contrasts, so no pilot to plan from.
    p.pilot_seeds = c.paired ? c.per_seed.size() : 0;
    p.estimate = p.sd = p.half_width_now = p.power_now = p.effect_sd = kPlanNaN;
    if (!c.per_seed.empty()) {
      const stats::Summary s = stats::summarize(c.per_seed);
      p.estimate = s.mean;
      // One seed has no sd; the pilot-size check below says so.
      p.sd = s.n >= 2 ? s.sd : kPlanNaN;
    }
    if (!c.paired) {
      p.too_small = true;
      p.note = fmt::format("no plan: {}; run the same seeds for every variant", c.unpaired_reason);
    } else if (p.pilot_seeds < kMinPilotSeeds) {
      p.too_small = true;
      p.note = fmt::format("no plan: the pilot has {} seed{}, fewer than {} cannot estimate the variance of the "
                           "contrast; run at least {} seeds first (egm sweep --extend)",
                           p.pilot_seeds, p.pilot_seeds == 1 ? "" : "s", kMinPilotSeeds, kMinPilotSeeds);
    } else {
      // Fixed-n t calculations at the per-claim alpha, taking the pilot's sd as the truth.
      p.half_width_now = stats::t_half_width(p.sd, p.pilot_seeds, alpha);
      if (o.half_width) p.seeds_for_half_width = stats::seeds_for_half_width(p.sd, *o.half_width, alpha);
      if (o.effect) {
        if (p.sd == 0) {
          // Every seed gave the same contrast: any effect is infinitely many sd.
          p.effect_sd = std::copysign(std::numeric_limits<double>::infinity(), *o.effect);
          p.power_now = 1.0;
          p.seeds_for_power = 2;
        } else {
          // The effect in units of the contrast's sd, the scale the power is computed on.
          p.effect_sd = *o.effect / p.sd;
          p.power_now = stats::paired_t_power(p.effect_sd, static_cast<double>(p.pilot_seeds), alpha);
          p.seeds_for_power = stats::seeds_for_power(p.effect_sd, o.power, alpha);
        }
      }
    }
    plan.claims.push_back(std::move(p));
  }
  for (const ClaimPlan& p : plan.claims)
    // Every variant runs the same seeds, so the largest need of any claim sets the count for all.
    if (p.seeds()) plan.seeds_needed = std::max(plan.seeds_needed, *p.seeds());

  // The variants of the planned claims, spec order, with their measured cost per done cell.
  std::set<std::string> wanted;
  for (const ClaimPlan& p : plan.claims)
    // Only claims with a plan add cells: a variant is not extended for a claim that cannot be planned.
    if (!p.too_small) wanted.insert(p.variants.begin(), p.variants.end());
  std::vector<std::string> order;
  for (const std::string& v : data.spec.variants)
    if (wanted.count(v) && std::find(order.begin(), order.end(), v) == order.end()) order.push_back(v);
  // Variants the spec does not list (cells merged from elsewhere) come after, in name order.
  for (const std::string& v : wanted)
    if (std::find(order.begin(), order.end(), v) == order.end()) order.push_back(v);
  for (const std::string& v : order) {
    VariantPlan vp;
    vp.variant = v;
    ComputeTotals sum;
    for (const CellData& cell : data.cells) {
      if (cell.row.variant != v || !cell.value(a.metric)) continue;
      ++vp.seeds_done;
      auto it = compute.cells.find(cell.row.id);
      // Reused and running cells have no finished run here (runs == 0): the rate comes from cells run here.
      if (it == compute.cells.end() || it->second.runs == 0) continue;
      ++vp.cells_costed;
      sum.add(it->second);
    }
    if (vp.cells_costed > 0) {
      const double k = 1.0 / static_cast<double>(vp.cells_costed);
      vp.per_cell.runs = 1;
      vp.per_cell.core_seconds = sum.core_seconds * k;
      for (const auto& [gpu, s] : sum.gpu_seconds) vp.per_cell.gpu_seconds[gpu] = s * k;
    }
    // Unsigned: a variant that already has more seeds than needed adds 0, not a wrapped-around count.
    vp.cells_to_add = plan.seeds_needed > vp.seeds_done ? plan.seeds_needed - vp.seeds_done : 0;
    if (vp.cells_to_add > 0) {
      // Cells of an untimed variant are left out of the implied compute, and the text says so.
      if (vp.cells_costed == 0) plan.uncosted = true;
      const double n = static_cast<double>(vp.cells_to_add);
      vp.implied.runs = static_cast<int64_t>(vp.cells_to_add);
      vp.implied.core_seconds = vp.per_cell.core_seconds * n;
      for (const auto& [gpu, s] : vp.per_cell.gpu_seconds) vp.implied.gpu_seconds[gpu] = s * n;
    }
    plan.cells_to_add += vp.cells_to_add;
    plan.implied.add(vp.implied);
    plan.variants.push_back(std::move(vp));
  }
  return plan;
}

std::vector<SweepPlan> plan_data(const SweepData& data, const ComputeStatement& compute, const PlanOptions& options) {
  check_options(options);
  PlanOptions o = options;
  // Learned parameters play no part in a plan; their analysis is skipped.
  o.analysis.analyse_params = false;
  std::vector<SweepPlan> plans;
  // Cells of different grid points never pair: each point is planned on its own cells.
  if (has_grid(data)) {
    for (const GridPointData& point : split_grid_points(data)) {
      SweepPlan p = plan_from_analysis(point.data, analyze_sweep(point.data, o.analysis), compute, o);
      p.sweep = data.sweep.name;
      p.point = point.label;
      plans.push_back(std::move(p));
    }
  } else {
    plans.push_back(plan_from_analysis(data, analyze_sweep(data, o.analysis), compute, o));
  }
  return plans;
}

std::vector<SweepPlan> plan_sweep(db::ResultsDb& db, const std::string& sweep, const PlanOptions& options) {
  check_options(options);
  const SweepData data = load_sweep(db, sweep, /*with_params=*/false);
  // One compute statement with every cell's cost; each point's plan reads its own cells from it.
  return plan_data(data, compute_statement(db, sweep), options);
}

namespace {

std::string plan_seeds_text(const std::optional<std::size_t>& n) { return n ? std::to_string(*n) : "-"; }
// fmt::runtime: the format string is an argument here, not checked at compile time.
std::string plan_num(double x, const char* f = "{:.4f}") { return std::isfinite(x) ? fmt::format(fmt::runtime(f), x) : "-"; }

std::string plan_per_cell_text(const ComputeTotals& t) {
  std::vector<std::string> parts;
  for (const auto& [gpu, s] : t.gpu_seconds) parts.push_back(fmt::format("{:.3g} GPU-s on {}", s, gpu));
  if (t.core_seconds > 0 || parts.empty()) parts.push_back(fmt::format("{:.3g} core-s", t.core_seconds));
  return fmt::format("{}", fmt::join(parts, " + "));
}

}  // namespace

std::string render_plan_text(const std::vector<SweepPlan>& plans) {
  std::string out;
  for (const SweepPlan& p : plans) {
    if (!out.empty()) out += "\n";
    out += fmt::format("plan for sweep {}{}: {} claim{}, alpha {:g} family-wise ({}: each claim planned at {:.4g})\n",
                       p.sweep, p.point.empty() ? "" : " at " + p.point, p.claims.size(),
                       p.claims.size() == 1 ? "" : "s", p.alpha, stats::adjustment_name(p.adjustment),
                       // Every claim of a plan has the same claim_alpha: the first one's stands for all.
                       p.claims.empty() ? p.alpha : p.claims.front().claim_alpha);
    std::vector<std::string> goals;
    if (p.half_width) goals.push_back(fmt::format("a t interval of +-{:g}", *p.half_width));
    if (p.effect) goals.push_back(fmt::format("power {:g} to detect an effect of {:g}", p.power, *p.effect));
    out += fmt::format("goal: {} (fixed n, paired t over seeds)\n", fmt::join(goals, " and "));
    out += fmt::format("  {:<22} {:>6} {:>9} {:>8} {:>10} {:>8} {:>7} {:>9} {:>8}\n", "claim", "pilot", "mean",
                       "sd", "+- now", "n (+-)", "E/sd", "power now", "n (pow)");
    for (const ClaimPlan& c : p.claims) {
      out += fmt::format("  {:<22} {:>6} {:>9} {:>8} {:>10} {:>8} {:>7} {:>9} {:>8}\n", c.name, c.pilot_seeds,
                         plan_num(c.estimate, "{:+.4f}"), plan_num(c.sd), plan_num(c.half_width_now), plan_seeds_text(c.seeds_for_half_width),
                         plan_num(c.effect_sd, "{:.2f}"), plan_num(c.power_now, "{:.3f}"), plan_seeds_text(c.seeds_for_power));
      if (!c.note.empty()) out += fmt::format("    {}: {}\n", c.name, c.note);
    }
    // No claim had a pilot: no seed count, so nothing to add or to cost.
    if (p.seeds_needed == 0) {
      out += "seeds needed: no claim has a pilot to plan from (see above)\n";
      continue;
    }
    out += fmt::format("seeds needed: {} per variant\n", p.seeds_needed);
    out += fmt::format("egm sweep --until on this spec: alpha {:g} over all {} claim{} the analysis forms (each at "
                       "{:.4g}); its sequences are unbounded before {} seeds\n",
                       p.alpha, p.until_claims, p.until_claims == 1 ? "" : "s", p.until_claim_alpha,
                       p.until_first_bounded);
    std::vector<std::string> adds;
    std::size_t done = 0;
    for (const VariantPlan& v : p.variants) {
      adds.push_back(fmt::format("{} {}", v.variant, v.cells_to_add));
      done += v.seeds_done;
    }
    out += fmt::format("cells: {} to add ({}) beside the {} these variants have done\n", p.cells_to_add,
                       fmt::join(adds, ", "), done);
    std::vector<std::string> rates;
    for (const VariantPlan& v : p.variants)
      rates.push_back(v.cells_costed ? fmt::format("{} {}", v.variant, plan_per_cell_text(v.per_cell))
                                     : fmt::format("{} not timed", v.variant));
    out += fmt::format("compute implied: {} (per done cell as measured: {}){}\n", compute_line(p.implied),
                       fmt::join(rates, "; "),
                       p.uncosted ? "; a variant without a timed cell is not counted" : "");
  }
  return out;
}

std::string plan_json(const std::vector<SweepPlan>& plans) {
  // NaN (not computed) becomes null: JSON has no NaN.
  auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  auto seeds = [](const std::optional<std::size_t>& n) { return n ? nlohmann::json(*n) : nlohmann::json(nullptr); };
  nlohmann::json all = nlohmann::json::array();
  for (const SweepPlan& p : plans) {
    nlohmann::json j;
    j["sweep"] = p.sweep;
    j["point"] = p.point;
    j["alpha"] = p.alpha;
    j["adjustment"] = stats::adjustment_name(p.adjustment);
    // A goal not asked for is null.
    j["half_width"] = p.half_width ? nlohmann::json(*p.half_width) : nlohmann::json(nullptr);
    j["effect"] = p.effect ? nlohmann::json(*p.effect) : nlohmann::json(nullptr);
    j["power"] = p.power;
    j["seeds_needed"] = p.seeds_needed;
    j["until"] = {{"claims", p.until_claims}, {"claim_alpha", p.until_claim_alpha},
                  {"first_bounded", p.until_first_bounded}};
    j["cells_to_add"] = p.cells_to_add;
    j["claims"] = nlohmann::json::array();
    for (const ClaimPlan& c : p.claims)
      j["claims"].push_back({{"name", c.name}, {"variants", c.variants}, {"pilot_seeds", c.pilot_seeds},
                             {"paired", c.paired}, {"estimate", number(c.estimate)}, {"sd", number(c.sd)},
                             {"too_small", c.too_small}, {"note", c.note}, {"claim_alpha", c.claim_alpha},
                             {"half_width_now", number(c.half_width_now)},
                             {"seeds_for_half_width", seeds(c.seeds_for_half_width)},
                             {"effect_sd", number(c.effect_sd)}, {"power_now", number(c.power_now)},
                             {"seeds_for_power", seeds(c.seeds_for_power)}});
    auto totals = [](const ComputeTotals& t) {
      return nlohmann::json{{"runs", t.runs}, {"core_seconds", t.core_seconds}, {"gpu_seconds", t.gpu_seconds}};
    };
    j["variants"] = nlohmann::json::array();
    for (const VariantPlan& v : p.variants)
      j["variants"].push_back({{"variant", v.variant}, {"seeds_done", v.seeds_done}, {"cells_to_add", v.cells_to_add},
                               {"cells_costed", v.cells_costed}, {"per_cell", totals(v.per_cell)},
                               {"implied", totals(v.implied)}});
    j["implied"] = totals(p.implied);
    j["implied_text"] = compute_line(p.implied);
    j["uncosted"] = p.uncosted;
    all.push_back(std::move(j));
  }
  return all.dump(2) + "\n";
}

}  // namespace egm::analysis
