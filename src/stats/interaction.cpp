// The 2x2 interaction I = A + B - AB - base: paired by seed when all four share
// their seeds, else a Welch-Satterthwaite contrast; the verdict from its interval.
#include "stats/interaction.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "stats/distributions.h"
#include "stats/paired.h"
#include "util/error.h"

namespace egm::stats {

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::superadditive: return "superadditive";
    case Verdict::subadditive: return "subadditive";
    case Verdict::additive_consistent: return "additive_consistent";
    case Verdict::no_interval: return "no_interval";
  }
  return "?";
}

Verdict verdict_for(bool has_interval, double low, double high) {
  // A NaN bound (one seed, or a cell with one seed) means no interval, whatever the flag says.
  if (!has_interval || std::isnan(low) || std::isnan(high)) return Verdict::no_interval;
  // I = delta_AB - (delta_A + delta_B) with delta = base - loss: above 0, both together gain more than the sum.
  if (low > 0.0) return Verdict::superadditive;
  if (high < 0.0) return Verdict::subadditive;
  return Verdict::additive_consistent;
}

namespace {

bool same_keys(const SeedValues& x, const SeedValues& y) {
  // SeedValues is a std::map, ordered by seed, so equal key sets compare equal pairwise.
  return x.size() == y.size() &&
         std::equal(x.begin(), x.end(), y.begin(), [](const auto& p, const auto& q) { return p.first == q.first; });
}

// Per-seed contrasts, t interval over seeds and bootstrap over seeds.
void analyse_paired(const SeedValues& base, const SeedValues& a, const SeedValues& b, const SeedValues& ab,
                    const InteractionOptions& options, InteractionResult& r) {
  r.paired = true;
  for (const auto& [seed, base_loss] : base) {
    r.seeds.push_back(seed);
    // The four cells on one seed share that seed's randomness, which the per-seed contrast cancels.
    r.per_seed.push_back(a.at(seed) + b.at(seed) - ab.at(seed) - base_loss);
  }
  r.n = r.per_seed.size();
  PairedResult t = paired_compare_differences(r.per_seed, options.level);
  ContrastResult& c = r.interval;
  c.level = options.level;
  c.estimate = t.difference.mean;
  c.se = t.difference.se;
  c.df = t.df;
  c.t_stat = t.t_stat;
  c.p = t.p_t;
  c.t_crit = t.difference.t_crit;
  c.ci_low = t.difference.ci_low;
  c.ci_high = t.difference.ci_high;
  c.has_interval = t.difference.has_interval;
  // With one seed every resample is that seed: a bootstrap interval would be a point, so none is made.
  if (r.n >= 2) {
    r.bootstrap = bootstrap_mean(r.per_seed, options.bootstrap_seed, options.bootstrap_resamples, options.level);
    r.has_bootstrap = true;
    r.method = fmt::format(
        "paired over {} shared seeds: t interval (df {}) on per-seed contrasts A+B-AB-base; "
        "percentile bootstrap over seeds (B={}, rng seed {})",
        r.n, r.n - 1, options.bootstrap_resamples, options.bootstrap_seed);
  } else {
    r.method = "paired on 1 shared seed: no interval with one seed";
  }
}

}  // namespace

InteractionResult interaction_2x2(const SeedValues& base, const SeedValues& a, const SeedValues& b,
                                  const SeedValues& ab, const InteractionOptions& options) {
  require_level(options.level);
  const std::array<const SeedValues*, 4> cells{&base, &a, &b, &ab};
  const std::array<const char*, 4> names{"base", "A", "B", "AB"};
  std::array<std::vector<double>, 4> values;
  InteractionResult r;
  for (std::size_t i = 0; i < 4; ++i) {
    EGM_REQUIRE(!cells[i]->empty(), ConfigError, "interaction cell {} has no seeds", names[i]);
    values[i] = values_of(*cells[i]);
    require_finite(values[i], names[i]);
    r.n_cells[i] = values[i].size();
  }
  // Cell means and gains over base are reported for either path; only the interval differs.
  r.mean_base = summarize(values[0]).mean;
  r.mean_a = summarize(values[1]).mean;
  r.mean_b = summarize(values[2]).mean;
  r.mean_ab = summarize(values[3]).mean;
  r.delta_a = r.mean_base - r.mean_a;
  r.delta_b = r.mean_base - r.mean_b;
  r.delta_ab = r.mean_base - r.mean_ab;

  // Pairing needs every cell on exactly base's seeds; one missing or extra seed falls back to Welch.
  bool shared = same_keys(base, a) && same_keys(base, b) && same_keys(base, ab);
  if (options.pair_by_seed && shared) {
    analyse_paired(base, a, b, ab, options, r);
  } else {
    // Cells treated as independent samples; coefficients follow I = A + B - AB - base.
    r.interval = satterthwaite_interval({-1.0, 1.0, 1.0, -1.0},
                                        {values[0], values[1], values[2], values[3]}, options.level);
    r.n = *std::min_element(r.n_cells.begin(), r.n_cells.end());
    r.method = r.interval.has_interval
                   ? fmt::format("cells on different seeds ({}/{}/{}/{}): Welch-Satterthwaite t interval "
                                 "for the contrast of cell means (df {:.2f})",
                                 r.n_cells[0], r.n_cells[1], r.n_cells[2], r.n_cells[3], r.interval.df)
                   : fmt::format("cells on different seeds ({}/{}/{}/{}): no interval, a cell has one seed",
                                 r.n_cells[0], r.n_cells[1], r.n_cells[2], r.n_cells[3]);
    if (!options.pair_by_seed && shared) r.method += " (pairing by seed switched off)";
  }
  r.estimate = r.interval.estimate;
  // Losses are in nats, so exp of a loss contrast is a perplexity ratio.
  r.ratio_estimate = std::exp(r.estimate);
  r.ratio_low = std::exp(r.interval.ci_low);  // exp(NaN) stays NaN
  r.ratio_high = std::exp(r.interval.ci_high);
  r.verdict = verdict_for(r.interval.has_interval, r.interval.ci_low, r.interval.ci_high);
  return r;
}

}  // namespace egm::stats
