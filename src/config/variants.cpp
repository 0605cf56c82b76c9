#include "config/variants.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "util/error.h"

namespace egm {

const std::vector<std::string>& attention_kinds() {
  static const std::vector<std::string> kinds = {"standard", "ega", "ega_causal"};
  return kinds;
}

const std::vector<std::string>& position_kinds() {
  static const std::vector<std::string> kinds = {"learned", "sincos", "mope", "rope",
                                                 "rope_only", "alibi", "none"};
  return kinds;
}

const std::vector<VariantInfo>& named_variants() {
  using nlohmann::json;
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
  };
  return variants;
}

VariantInfo resolve_variant(const std::string& name) {
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
    return VariantInfo{name, att, pos, nlohmann::json::object(), "generic ATTENTION+POSITION variant"};
  }
  std::vector<std::string> names;
  for (const auto& v : named_variants()) names.push_back(v.name);
  EGM_THROW(ConfigError, "unknown variant '{}'; valid: {} (or ATTENTION+POSITION)", name, fmt::join(names, ", "));
}

bool attention_sees_future(const std::string& attention) {
  return attention == "ega";
}

}  // namespace egm
