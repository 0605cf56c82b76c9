// egm merge's rules for the stored specs of one sweep in several databases (spec_union.h).
#include "spec/spec_union.h"

#include <fmt/format.h>

#include <set>

namespace egm::spec {
namespace {

using nlohmann::json;

// Where the specs of one sweep may differ between inputs: the lists that
// --extend grows (cells are added, none changed), and what names variants.
bool is_union_list(const std::string& path) {
  return path == "$.seeds" || path == "$.variants" || path == "$.factorial.attention" ||
         path == "$.factorial.position";
}
bool may_be_absent(const std::string& path) {  // a split by variant drops what names the other half's variants
  return path == "$.baseline" || path == "$.factors" || path == "$.published" || path == "$.data_parallel_by_variant";
}
bool is_keyed_union(const std::string& path) {  // objects keyed by variant
  return path == "$.published.values" || path == "$.data_parallel_by_variant";
}

std::string excerpt(const json& j) {
  std::string s = j.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Merges spec `b` into `a`; the path of the first difference that is not
// allowed, or nullopt.
std::optional<std::string> merge_at(json& a, const json& b, const std::string& path) {
  if (is_union_list(path) && a.is_array() && b.is_array()) {
    // A set of what `a` holds: 100,000 seeds against 80,000 was quadratic (143 s).
    std::set<std::string> seen;
    for (const json& v : a) seen.insert(v.dump());
    for (const json& v : b)
      if (seen.insert(v.dump()).second) a.push_back(v);
    return std::nullopt;
  }
  const bool recurse = path == "$" || path == "$.published" || path == "$.factorial" || is_keyed_union(path);
  if (recurse && a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const std::string& k : keys) {
      const std::string sub = path + "." + k;
      const bool in_a = a.contains(k), in_b = b.contains(k);
      if (in_a && in_b) {
        if (auto bad = merge_at(a[k], b.at(k), sub)) return bad;
      } else if (!(may_be_absent(sub) || is_keyed_union(path))) {
        return fmt::format("{} (in one, not the other)", sub);
      } else if (in_b) {
        // Present in b only: the union takes b's value.
        a[k] = b.at(k);
      }
    }
    return std::nullopt;
  }
  // Anything else must be equal in every input: a different preset or override means a different sweep.
  if (a == b) return std::nullopt;
  return fmt::format("{} ({} vs {})", path, excerpt(a), excerpt(b));
}

}  // namespace

std::optional<std::string> union_specs(json& a, const json& b) { return merge_at(a, b, "$"); }

}  // namespace egm::spec
