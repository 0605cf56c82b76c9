// The named model variants: each is an (attention, position) pair plus the
// few options that distinguish ablations. A variant can also be written
// generically as "ATTENTION+POSITION" (e.g. "ega_causal+alibi").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace egm {

struct VariantInfo {
  std::string name;
  std::string attention;  // one of attention_kinds()
  std::string position;   // one of position_kinds()
  // Options this variant fixes on ModelConfig (e.g. {"conv_max_lag": 4}).
  nlohmann::json options = nlohmann::json::object();
  std::string description;
};

// Attention mechanisms the model zoo implements.
const std::vector<std::string>& attention_kinds();
// Positional encodings the model zoo implements.
const std::vector<std::string>& position_kinds();
// Every named variant, in a stable order (the paper's four first).
const std::vector<VariantInfo>& named_variants();

// Resolves a name (named or "ATT+POS"); throws ConfigError listing the valid
// names when it is unknown.
VariantInfo resolve_variant(const std::string& name);

// True when an attention kind is non-causal by design (the paper's EGA and
// everything built on it: its z-score reads keys after the query).
bool attention_sees_future(const std::string& attention);

}  // namespace egm
