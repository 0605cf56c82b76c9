// The tables of attention kinds, position kinds and named variants, and how a
// name (or "ATTENTION+POSITION") resolves to its parts.
#include "config/variants.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "util/error.h"

namespace egm {

const std::vector<std::string>& attention_kinds() {
  // The names model/attention.cpp builds a module for; adding a kind here needs a module there.
  static const std::vector<std::string> kinds = {"standard", "ega",     "ega_causal", "conv",
                                                 "ega2",     "ega4",    "ega_morlet", "ega_db2",
                                                 "ega_db4",  "mq_e",    "mq_ep",      "mq_ef",
                                                 "mq_epf"};
  return kinds;
}

const std::vector<std::string>& position_kinds() {
  static const std::vector<std::string> kinds = {"learned", "sincos", "mope", "rope",
                                                 "rope_only", "alibi", "none"};
  return kinds;
}

const std::vector<VariantInfo>& named_variants() {
  using nlohmann::json;
  // Each: name, attention kind, position kind, the model options it fixes, a one-line description.
  // Names are stored in cells (the variant column and cell keys), so they may be added, never renamed.
  static const std::vector<VariantInfo> variants = {
      {"base", "standard", "learned", json::object(), "the paper's baseline: standard attention, learned absolute table"},
      {"ega", "ega", "learned", json::object(), "Energy-Gated Attention as published (z-score over all T: sees the future)"},
      {"mope", "standard", "mope", json::object(), "Morlet positional encoding as published"},
      {"ega_mope", "ega", "mope", json::object(), "EGA + MoPE, the paper's headline model"},
      {"sincos", "standard", "sincos", json::object(), "fixed sinusoidal table, base 10000"},
      {"rope", "standard", "rope", json::object(), "RoPE on q,k plus the learned table (as in the paper)"},
      {"rope_only", "standard", "rope_only", json::object(), "RoPE on q,k, no table"},
      {"alibi", "standard", "alibi", json::object(), "ALiBi linear score bias, no table"},
      {"nope", "standard", "none", json::object(), "no positional information"},
      {"ega_causal", "ega_causal", "learned", json::object(), "EGA with prefix statistics (causal)"},
      {"ega_causal_mope", "ega_causal", "mope", json::object(), "causal EGA + MoPE"},
      // Ablations (SPEC.md section 5), defined in src/model/ABLATIONS.md.
      {"conv_l4", "conv", "learned", json{{"conv_max_lag", 4}}, "lagged cross-correlation attention, lags -4..4"},
      {"conv_l8", "conv", "learned", json{{"conv_max_lag", 8}}, "lagged cross-correlation attention, lags -8..8"},
      {"conv_l16", "conv", "learned", json{{"conv_max_lag", 16}}, "lagged cross-correlation attention, lags -16..16"},
      {"scale_init", "standard", "learned", json{{"qk_scale_init", true}},
       "base with Q/K of head h initialised with std 0.02*(1+(h mod 4)/4)"},
      {"ega2", "ega2", "learned", json::object(), "EGA with 2 energy projections per head, gates mixed"},
      {"ega4", "ega4", "learned", json::object(), "EGA with 4 energy projections per head, gates mixed"},
      {"ega_morlet", "ega_morlet", "learned", json::object(), "Morlet wavelet energy gate, 4 learned scales (EGA-M)"},
      {"ega_db2", "ega_db2", "learned", json::object(), "fixed Daubechies db2 energy gate, 4 dilated scales"},
      {"ega_db4", "ega_db4", "learned", json::object(), "fixed Daubechies db4 energy gate, 4 dilated scales"},
      {"mq_e", "mq_e", "learned", json::object(), "multi-quantity attention: Morlet energy score term + gate"},
      {"mq_ep", "mq_ep", "learned", json::object(), "multi-quantity attention: energy + phase coherence"},
      {"mq_ef", "mq_ef", "learned", json::object(), "multi-quantity attention: energy + spectral flux"},
      {"mq_epf", "mq_epf", "learned", json::object(), "multi-quantity attention: energy + phase + flux"},
      {"ega_nope", "ega", "none", json::object(), "EGA without positional information"},
      {"ega_alibi", "ega", "alibi", json::object(), "EGA with ALiBi, no table"},
      {"ega_rope_only", "ega", "rope_only", json::object(), "EGA with RoPE on q,k, no table"},
      {"ega_causal_nope", "ega_causal", "none", json::object(), "causal EGA without positional information"},
      {"ega_causal_alibi", "ega_causal", "alibi", json::object(), "causal EGA with ALiBi, no table"},
      {"ega_causal_rope_only", "ega_causal", "rope_only", json::object(), "causal EGA with RoPE on q,k, no table"},
  };
  return variants;
}

VariantInfo resolve_variant(const std::string& name) {
  // A named variant first: a name with '+' is never a named one, so the two forms cannot clash.
  for (const auto& v : named_variants())
    if (v.name == name) return v;
  auto plus = name.find('+');
  if (plus != std::string::npos) {
    std::string att = name.substr(0, plus), pos = name.substr(plus + 1);
    const auto& ak = attention_kinds();
    const auto& pk = position_kinds();
    EGM_REQUIRE(std::find(ak.begin(), ak.end(), att) != ak.end(), ConfigError,
                "unknown attention '{}' in variant '{}'; valid: {}", att, name, fmt::join(ak, ", "));
    EGM_REQUIRE(std::find(pk.begin(), pk.end(), pos) != pk.end(), ConfigError,
                "unknown position encoding '{}' in variant '{}'; valid: {}", pos, name, fmt::join(pk, ", "));
    // A generic pair fixes no options: "conv+learned" takes conv_max_lag from the config.
    return VariantInfo{name, att, pos, nlohmann::json::object(), "generic ATTENTION+POSITION variant"};
  }
  std::vector<std::string> names;
  for (const auto& v : named_variants()) names.push_back(v.name);
  EGM_THROW(ConfigError, "unknown variant '{}'; valid: {} (or ATTENTION+POSITION)", name, fmt::join(names, ", "));
}

bool attention_sees_future(const std::string& attention) {
  // Every gate or score term z-scored over the whole window reads keys after the query.
  static const std::vector<std::string> over_t = {"ega",     "ega2", "ega4",  "ega_morlet", "ega_db2",
                                                  "ega_db4", "mq_e", "mq_ep", "mq_ef",      "mq_epf"};
  return std::find(over_t.begin(), over_t.end(), attention) != over_t.end();
}

}  // namespace egm
