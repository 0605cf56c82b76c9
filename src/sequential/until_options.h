// A sequential sweep's options, defined once: the flags of `egm sweep` and
// `egm submit` (--until, --max-seeds, --batch, --half-width, --alpha), the
// spec's "until" field (spec::Until), how the two combine, their checks, and
// the arguments that pass them on to the `egm sweep` a batch job runs. No
// LibTorch: `egm submit` checks them before it writes anything. The loop
// itself (launch, look, extend) is loop.h.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/experiment_spec.h"

namespace egm::sequential {

// The most seeds a sequential sweep may run per variant, and add per look: the
// spec's until field allows no more (schemas/experiment.schema.json), and the flags no more either.
inline constexpr int64_t kMaxUntilSeeds = 100000;
// The largest seed a spec may hold (2^53 - 1, the schema's maximum: exact as a JSON number).
inline constexpr uint64_t kMaxSeedValue = 9007199254740991ULL;

// The options as the loop uses them, every field decided.
struct UntilOptions {
  std::string claims;                 // "interaction,ega", "delta(ega)", "all"; empty: not sequential
  int64_t max_seeds = 0;              // the budget: seeds per variant at most
  int64_t batch = 1;                  // seeds added per look
  std::optional<double> half_width;   // a claim narrower than +-this is settled too
  double alpha = 0.05;                // family-wise over the claims
  // --new-sequence: alpha and half-width may differ from the sweep's first
  // look's; the looks from here on are a sequence of their own (recorded).
  bool new_sequence = false;
  bool active() const { return !claims.empty(); }
};

// The flags as given: each one absent unless the user wrote it.
struct UntilFlags {
  std::optional<std::string> claims;  // "none": the spec's seeds only, whatever its "until" says
  std::optional<int64_t> max_seeds;
  std::optional<int64_t> batch;
  std::optional<double> half_width;
  std::optional<double> alpha;
  bool new_sequence = false;
};

// Registers the six flags on `app` (egm sweep, egm submit).
void add_until_flags(CLI::App& app, UntilFlags& flags);

// The spec's "until" field with the given flags over it. ConfigError when a
// budget flag comes without claims (neither --until nor the field).
UntilOptions resolve_until(const UntilFlags& flags, const spec::ExperimentSpec& spec);

// Every claim the analysis forms for this spec, the family --until's
// Bonferroni splits alpha over (src/stats/README.md, "Several claims"): the
// delta of each variant against the baseline, and the interaction when the
// spec has a 2x2 ("factors", or the variants base, ega, mope, ega_mope).
std::vector<std::string> claim_family(const spec::ExperimentSpec& spec);

// The claims as the analysis names them ("delta(ega)", "interaction"), or
// ConfigError naming what is wrong: an unknown variant, the baseline, an
// interaction the spec cannot form, a grid, a bad budget, half-width or alpha.
std::vector<std::string> check_until(const UntilOptions& options, const spec::ExperimentSpec& spec);

// The arguments that give `egm sweep` these options, every field that has a
// value written out (a batch job does what was checked at submission; only an
// absent half-width is left to the spec's field, which the job reads from the
// same file). `options` must be active.
std::vector<std::string> until_arguments(const UntilOptions& options);

}  // namespace egm::sequential
