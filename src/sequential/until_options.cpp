// A sequential sweep's options (until_options.h): the flags, the spec's "until" field
// under them, their refusals, and the arguments that pass them on.
#include "sequential/until_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "util/error.h"

namespace egm::sequential {

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

void add_until_flags(CLI::App& app, UntilFlags& f) {
  app.add_option("--until", f.claims,
                 "add seeds until these claims are settled: variants (their delta against the baseline), interaction, "
                 "or all, comma-separated; needs --max-seeds (or the spec's \"until\" field; none: the spec's seeds "
                 "only)");
  app.add_option("--max-seeds", f.max_seeds, "--until's budget: seeds per variant at most");
  app.add_option("--batch", f.batch, "--until: seeds added per look (default 1)");
  app.add_option("--half-width", f.half_width,
                 "--until: a claim whose sequence is narrower than +-this (nats) is settled too");
  app.add_option("--alpha", f.alpha, "--until: the claims' family-wise error, in (0, 0.5) (default 0.05)");
  app.add_flag("--new-sequence", f.new_sequence,
               "--until: start a new sequence on a sweep that has looks (another --alpha or --half-width than its "
               "first look's); recorded with the look, and the earlier looks' guarantee does not carry over");
}

UntilOptions resolve_until(const UntilFlags& f, const spec::ExperimentSpec& spec) {
  UntilOptions o;
  if (f.claims && *f.claims == "none") return o;  // the flag turns the field off
  if (spec.until) {
    const spec::Until& u = *spec.until;
    o.claims = fmt::format("{}", fmt::join(u.claims, ","));
    o.max_seeds = u.max_seeds;
    o.batch = u.batch.value_or(o.batch);
    o.half_width = u.half_width;
    o.alpha = u.alpha.value_or(o.alpha);
  }
  if (f.claims) o.claims = *f.claims;
  if (f.max_seeds) o.max_seeds = *f.max_seeds;
  if (f.batch) o.batch = *f.batch;
  if (f.half_width) o.half_width = *f.half_width;
  if (f.alpha) o.alpha = *f.alpha;
  o.new_sequence = f.new_sequence;
  if (!o.active()) {
    const char* given = f.max_seeds ? "--max-seeds" : f.batch ? "--batch" : f.half_width ? "--half-width"
                        : f.alpha          ? "--alpha"
                        : f.new_sequence   ? "--new-sequence"
                                           : nullptr;
    EGM_REQUIRE(!given, ConfigError,
                "{} belongs to a sequential sweep: name its claims with --until (or an \"until\" field in {})", given,
                spec.source);
  }
  return o;
}

std::vector<std::string> claim_family(const spec::ExperimentSpec& spec) {
  std::vector<std::string> variants(spec.variants.begin(), spec.variants.end());
  const std::string baseline = spec.baseline.value_or(has(variants, "base") ? "base" : "");
  std::vector<std::string> family;
  if (!baseline.empty())
    for (const auto& v : variants)
      if (v != baseline) family.push_back("delta(" + v + ")");
  const bool paper_2x2 = has(variants, "ega") && has(variants, "mope") && has(variants, "ega_mope") && has(variants, "base");
  if (spec.factors || paper_2x2) family.push_back("interaction");
  return family;
}

std::vector<std::string> check_until(const UntilOptions& o, const spec::ExperimentSpec& spec) {
  EGM_REQUIRE(spec.grid.empty(), ConfigError,
              "--until: sweep {} has a grid; a sequential sweep settles one configuration (write one spec per grid "
              "point)",
              spec.name);
  EGM_REQUIRE(o.max_seeds > 0, ConfigError, "--until needs a budget: --max-seeds N (seeds per variant at most)");
  EGM_REQUIRE(o.max_seeds >= static_cast<int64_t>(spec.seeds.size()), ConfigError,
              "--max-seeds {} is below the {} seeds the spec already has", o.max_seeds, spec.seeds.size());
  EGM_REQUIRE(o.batch >= 1, ConfigError, "--batch {}: add at least one seed per look", o.batch);
  // The spec's own until field allows at most kMaxUntilSeeds of each: a flag may not go past what the field would refuse.
  EGM_REQUIRE(o.max_seeds <= kMaxUntilSeeds, ConfigError, "--max-seeds {}: at most {} seeds per variant",
              o.max_seeds, kMaxUntilSeeds);
  EGM_REQUIRE(o.batch <= kMaxUntilSeeds, ConfigError, "--batch {}: at most {} seeds per look", o.batch,
              kMaxUntilSeeds);
  EGM_REQUIRE(!o.half_width || (std::isfinite(*o.half_width) && *o.half_width > 0), ConfigError,
              "--half-width {}: must be > 0 (the half-width in nats at which a claim counts as settled)",
              o.half_width.value_or(0));
  EGM_REQUIRE(std::isfinite(o.alpha) && o.alpha > 0 && o.alpha < 0.5, ConfigError,
              "--alpha {}: must be in (0, 0.5)", o.alpha);
  std::vector<std::string> variants;
  for (const auto& v : spec.variants) variants.push_back(v);
  std::string baseline = spec.baseline.value_or(has(variants, "base") ? "base" : "");
  std::optional<spec::Factors> factors = spec.factors;
  if (!factors && has(variants, "ega") && has(variants, "mope") && has(variants, "ega_mope") && has(variants, "base"))
    factors = spec::Factors{"ega", "mope", "ega_mope", "base"};
  std::vector<std::string> claims;
  auto add = [&](const std::string& c) {
    if (!has(claims, c)) claims.push_back(c);
  };
  const std::vector<std::string> family = claim_family(spec);
  std::stringstream in(o.claims);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    if (item == "all") {
      for (const std::string& c : family) add(c);
      continue;
    }
    if (item == "interaction") {
      EGM_REQUIRE(factors.has_value(), ConfigError,
                  "--until interaction: sweep {} has no 2x2 (no \"factors\" in the spec, and not the variants base, "
                  "ega, mope, ega_mope)",
                  spec.name);
      add("interaction");
      continue;
    }
    std::string v = item;
    if (v.rfind("delta(", 0) == 0 && v.back() == ')') v = v.substr(6, v.size() - 7);
    EGM_REQUIRE(has(variants, v), ConfigError, "--until {}: no variant '{}' in sweep {} (variants: {}; or interaction, all)",
                item, v, spec.name, fmt::join(variants, ", "));
    EGM_REQUIRE(!baseline.empty(), ConfigError,
                "--until {}: sweep {} has no baseline to measure a delta against (\"baseline\" in the spec)", item,
                spec.name);
    EGM_REQUIRE(v != baseline, ConfigError, "--until {}: '{}' is the baseline; its delta is 0 by definition", item, v);
    add("delta(" + v + ")");
  }
  EGM_REQUIRE(!claims.empty(), ConfigError, "--until '{}': name at least one claim (a variant, interaction, or all)",
              o.claims);
  return claims;
}

std::vector<std::string> until_arguments(const UntilOptions& o) {
  EGM_CHECK(o.active(), "until_arguments of a sweep that is not sequential");
  std::vector<std::string> args{"--until",  o.claims, "--max-seeds", std::to_string(o.max_seeds),
                                "--batch",  std::to_string(o.batch), "--alpha", fmt::format("{}", o.alpha)};
  if (o.half_width) args.insert(args.end(), {"--half-width", fmt::format("{}", *o.half_width)});
  if (o.new_sequence) args.push_back("--new-sequence");  // a requeued job's looks keep the new sequence's values
  return args;
}

}  // namespace egm::sequential
