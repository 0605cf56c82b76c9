// Each claim's confidence sequence replayed over its seeds in the spec's seed
// order (the order they were run), and its looks as a table.
#include "analysis/sequences.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "util/error.h"

namespace egm::analysis {
namespace {

// One claim's per-seed contrasts and, for size only, its fixed-n interval
// (a delta's Estimate or the interaction's ContrastResult: both carry one).
template <typename Interval>
ClaimSequence claim_sequence(std::string claim, const std::vector<int64_t>& seeds, const std::vector<double>& per_seed,
                             const Interval& fixed) {
  ClaimSequence c;
  c.claim = std::move(claim);
  c.seeds = seeds;
  c.contrasts = per_seed;
  c.fixed_has_interval = fixed.has_interval;
  c.fixed_low = fixed.ci_low;
  c.fixed_high = fixed.ci_high;
  return c;
}

// The contrasts in the order their seeds were run: the spec's list, then any
// seed it does not name (ascending).
void order_by_run(const std::vector<uint64_t>& seed_order, std::vector<int64_t>& seeds, std::vector<double>& values) {
  std::map<int64_t, std::size_t> rank;
  for (std::size_t i = 0; i < seed_order.size(); ++i) rank.emplace(static_cast<int64_t>(seed_order[i]), i);  // cells store seeds as SQLite integers
  std::vector<std::size_t> idx(seeds.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto key = [&](std::size_t i) {
    auto it = rank.find(seeds[i]);
    // Seeds the spec does not name sort after those it does, ascending among themselves.
    return std::make_pair(it == rank.end() ? seed_order.size() : it->second, seeds[i]);
  };
  // The key (rank, seed) differs for every seed, so the order is fully determined.
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return key(x) < key(y); });
  std::vector<int64_t> s;
  std::vector<double> v;
  for (std::size_t i : idx) {
    s.push_back(seeds[i]);
    v.push_back(values[i]);
  }
  seeds = std::move(s);
  values = std::move(v);
}

std::string bound_text(double x) { return std::isfinite(x) ? fmt::format("{:+.4f}", x) : (x < 0 ? "-inf" : "+inf"); }

}  // namespace

std::vector<ClaimSequence> claim_sequences(const SweepAnalysis& a, const std::vector<uint64_t>& seed_order,
                                           const SequenceOptions& o) {
  EGM_REQUIRE(o.alpha > 0 && o.alpha < 0.5, ConfigError, "alpha must lie strictly between 0 and 0.5, got {}", o.alpha);
  std::vector<ClaimSequence> out;
  for (const DeltaResult& d : a.deltas) {
    // Only a paired delta has per-seed contrasts to replay; an unpaired one has no order of looks.
    if (!d.paired || d.per_seed.empty()) continue;
    out.push_back(claim_sequence(fmt::format("delta({})", d.variant), d.seeds, d.per_seed, d.delta));
  }
  if (a.interaction && a.interaction->result.paired && !a.interaction->result.per_seed.empty()) {
    const stats::InteractionResult& r = a.interaction->result;
    out.push_back(claim_sequence("interaction", r.seeds, r.per_seed, r.interval));
  }
  stats::TMixtureOptions t;
  // Each sequence at the per-claim alpha (alpha / m for Bonferroni and Holm alike, stats/confidence_sequence.h).
  t.alpha = stats::per_claim_alpha(o.alpha, out.size(), o.adjustment);
  t.prior_sd = o.prior_sd;
  std::size_t longest = 0;
  for (ClaimSequence& c : out) {
    // Replayed in run order: the looks are those a sequential sweep would have taken.
    order_by_run(seed_order, c.seeds, c.contrasts);
    c.options = t;
    c.looks = stats::t_mixture_sequence(c.contrasts, t);
    longest = std::max(longest, c.looks.size());
  }
  // Decisions at every look k (a claim with fewer seeds at its last look),
  // so Holm sees every claim's evidence at the same point.
  for (std::size_t k = 1; k <= longest; ++k) {
    std::vector<stats::SequenceLook> at;
    for (const ClaimSequence& c : out) at.push_back(c.looks[std::min(k, c.looks.size()) - 1]);
    const std::vector<stats::Decision> d = stats::decide(at, o.alpha, o.adjustment, o.half_width);
    for (std::size_t i = 0; i < out.size(); ++i) {
      // A claim out of seeds keeps the decision of its last look.
      if (k > out[i].looks.size()) continue;
      out[i].decision = d[i];
      out[i].decisions.push_back(d[i]);
      if (!out[i].settled_at && stats::settled(d[i])) out[i].settled_at = k;
    }
  }
  return out;
}

std::string render_sequences_text(const std::vector<ClaimSequence>& sequences, const SequenceOptions& o,
                                  double level) {
  if (sequences.empty()) return "";
  const stats::TMixtureOptions& t = sequences.front().options;
  std::string s = fmt::format(
      "anytime-valid confidence sequences ({}, {}; {} over {} claim{}, family-wise {:g}), looked at after every "
      "seed in run order:\n",
      stats::t_mixture_method_name(), stats::t_mixture_params(t), stats::adjustment_name(o.adjustment),
      sequences.size(), sequences.size() == 1 ? "" : "s", o.alpha);
  for (const ClaimSequence& c : sequences) {
    // The last look's numbers: where each sequence stands now.
    const stats::SequenceLook& last = c.looks.back();
    std::string settled = c.settled_at ? fmt::format("settled at seed {} of {}", *c.settled_at, c.looks.size())
                                       : fmt::format("not settled after {} seed{}", c.looks.size(),
                                                     c.looks.size() == 1 ? "" : "s");
    s += fmt::format("  {:<22} {:+.4f}  sequence [{}, {}]  {:<9}  {}; anytime p {:.3g}\n", c.claim, last.estimate,
                     bound_text(last.lower), bound_text(last.upper), stats::decision_name(c.decision), settled,
                     last.p_anytime);
    if (c.fixed_has_interval)
      s += fmt::format("  {:<22} fixed-n {} t interval [{:+.4f}, {:+.4f}]: valid only if the seed count was fixed "
                       "in advance, not after optional stopping\n",
                       "", percent(level), c.fixed_low, c.fixed_high);
  }
  // Depends on alpha and the prior only, not on the data: one line for every claim.
  const std::size_t first = stats::t_mixture_first_bounded(t);
  s += fmt::format("  (the sequence is the whole line before {} seeds at this alpha; src/stats/README.md)\n", first);
  return s;
}

db::Table sequences_table(const std::vector<ClaimSequence>& sequences, const SequenceOptions& options) {
  db::Table t;
  t.columns = {"claim", "look", "seed", "contrast", "estimate", "lower", "upper", "p_anytime", "decision", "settled",
               "method", "params"};
  // The whole line's infinite bounds become NULL: CSV and JSON have no infinity.
  auto real = [](double x) { return std::isfinite(x) ? db::Value(x) : db::Value(); };
  for (const ClaimSequence& c : sequences) {
    const std::string params =
        fmt::format("{} adjustment={} family_alpha={:g}", stats::t_mixture_params(c.options),
                    stats::adjustment_name(options.adjustment), options.alpha);
    for (std::size_t i = 0; i < c.looks.size(); ++i) {
      const stats::SequenceLook& l = c.looks[i];
      // Settled from its first settling look on: a decision is never revisited.
      const bool settled = c.settled_at && i + 1 >= *c.settled_at;
      t.rows.push_back({db::Value(c.claim), db::Value(static_cast<int64_t>(l.n)), db::Value(c.seeds[i]),
                        db::Value(c.contrasts[i]), real(l.estimate), real(l.lower), real(l.upper),
                        db::Value(l.p_anytime), db::Value(std::string(stats::decision_name(c.decisions.at(i)))),
                        db::Value(std::string(settled ? "yes" : "no")), db::Value(std::string(stats::t_mixture_method_name())),
                        db::Value(params)});
    }
  }
  return t;
}

}  // namespace egm::analysis
