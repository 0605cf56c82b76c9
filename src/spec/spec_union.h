// The union of two stored specs of one sweep (egm merge): where they may
// differ and how they combine. Two databases that ran halves of one sweep
// (split by seed or by variant, or one extended with --extend) hold specs
// that agree everywhere except in the lists --extend grows and in what names
// the other half's variants.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace egm::spec {

// Merges stored spec `b` into `a` (both canonical JSON, spec.canonical):
// seeds, variants and a factorial's levels are unioned (a's order, then b's
// new items); baseline, factors, published and data_parallel_by_variant may be
// absent from one (a split by variant drops them), and the objects keyed by
// variant (published.values, data_parallel_by_variant) are unioned key by key.
// Any other difference is not allowed: its JSON path ("$.preset (\"tiny\" vs
// \"small\")", "$.steps (in one, not the other)") is returned, and `a` is then
// partly merged. nullopt when `b` is merged.
std::optional<std::string> union_specs(nlohmann::json& a, const nlohmann::json& b);

}  // namespace egm::spec
