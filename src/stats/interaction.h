// The 2x2 interaction of two modifications A and B over a base (for the
// paper: A = EGA attention, B = MoPE positions, AB = both), with an interval
// and a verdict on the paper's superadditivity claim (I = +0.059).
//
// Algebra. Improvements are measured as in the paper, delta(X) = base - X
// (val loss; positive = better than base). The interaction is
//   I = delta(AB) - delta(A) - delta(B)
//     = (base - AB) - (base - A) - (base - B)
//     = A + B - AB - base.
// I > 0: doing both helps more than the two gains added (superadditive).
// Paper's one-seed numbers: 1.3821 + 1.5060 - 1.3550 - 1.4742 = +0.0589.
//
// Scales. Val loss is the mean log-perplexity (nats), so the interaction of
// log(perplexity) IS the loss contrast above. On the multiplicative
// perplexity scale the same quantity reads
//   exp(I) = ppl(A) * ppl(B) / (ppl(AB) * ppl(base)),  ppl(X) = exp(mean loss of X)
// (i.e. geometric-mean perplexity over seeds); its interval is exp of the loss
// interval, and exp(I) > 1 exactly when I > 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stats/bootstrap.h"
#include "stats/seed_values.h"
#include "stats/welch.h"

namespace egm::stats {

enum class Verdict {
  superadditive,        // interval entirely above 0
  subadditive,          // interval entirely below 0
  additive_consistent,  // interval contains 0
  no_interval,          // fewer than 2 seeds (or contrasts): no interval
};
const char* verdict_name(Verdict verdict);
// Verdict of an interval [low, high] for a quantity whose null value is 0.
Verdict verdict_for(bool has_interval, double low, double high);

struct InteractionOptions {
  double level = 0.95;
  std::size_t bootstrap_resamples = 10000;
  std::uint64_t bootstrap_seed = 0;  // the caller's choice, recorded in the result
  // Use per-seed contrasts when all four cells hold exactly the same seeds.
  // False forces the unpaired (Satterthwaite) analysis.
  bool pair_by_seed = true;
};

struct InteractionResult {
  double mean_base = 0.0, mean_a = 0.0, mean_b = 0.0, mean_ab = 0.0;
  double delta_a = 0.0, delta_b = 0.0, delta_ab = 0.0;  // base - X, from cell means
  double estimate = 0.0;                 // I = A + B - AB - base (loss units, nats)
  std::array<std::size_t, 4> n_cells{};  // seeds in base, A, B, AB
  bool paired = false;                   // per-seed contrasts were used
  std::size_t n = 0;  // paired: shared seeds (contrasts); unpaired: smallest cell
  std::vector<std::int64_t> seeds;       // paired only: the shared seeds
  std::vector<double> per_seed;          // paired only: c_s = A_s + B_s - AB_s - base_s
  std::string method;                    // one sentence for the report
  // Primary t interval: over per-seed contrasts (df = n - 1) when paired,
  // Welch-Satterthwaite on the contrast (+1, +1, -1, -1) of cell means otherwise.
  ContrastResult interval;
  // Paired only: percentile bootstrap of the mean contrast, resampling seeds.
  bool has_bootstrap = false;
  BootstrapInterval bootstrap;
  // Perplexity-ratio scale: exp(estimate) and exp of the t interval (NaN
  // without an interval).
  double ratio_estimate = 0.0, ratio_low = 0.0, ratio_high = 0.0;
  Verdict verdict = Verdict::no_interval;  // from the primary t interval
};

// Throws ConfigError if a cell is empty or holds a non-finite value.
InteractionResult interaction_2x2(const SeedValues& base, const SeedValues& a, const SeedValues& b,
                                  const SeedValues& ab, const InteractionOptions& options = {});

}  // namespace egm::stats
