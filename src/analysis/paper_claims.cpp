// The paper's claims file: parsing and every check made at load, and the
// copy embedded in the binary (experiments/paper_claims.json).
#include "analysis/paper_claims.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "config/variants.h"
#include "analysis/generated_paper_claims.h"  // egm_embed_file (CMakeLists.txt)
#include "util/enum_names.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace egm::analysis {
namespace {

using Json = nlohmann::json;

constexpr const char* kKindNames[] = {"value", "delta", "interaction", "mope_clusters", "mope_boundary"};  // enum order

// Reads one entry's fields, each problem one line naming the entry. Every
// field it was asked for is remembered, so a field no kind takes (a typo:
// "vlaue") is refused too instead of silently ignored.
class Entry {
 public:
  Entry(const Json& j, std::string where) : j_(j), where_(std::move(where)) {}

  [[noreturn]] void refuse(const std::string& what) const { EGM_THROW(ConfigError, "{}: {}", where_, what); }

  const Json* field(const char* key, bool required) {
    // Recorded whether present or not: no_other_fields then refuses only keys no reader asked for.
    known_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) refuse(fmt::format("'{}' is missing", key));
      return nullptr;
    }
    return &*it;
  }
  std::optional<std::string> text(const char* key, bool required) {
    const Json* v = field(key, required);
    if (!v) return std::nullopt;
    if (!v->is_string()) refuse(fmt::format("'{}' must be a string, got {}", key, v->type_name()));
    return v->get<std::string>();
  }
  // A finite JSON number: "1.38" in quotes, true, null or NaN are malformed.
  std::optional<double> number(const char* key, bool required) {
    const Json* v = field(key, required);
    if (!v) return std::nullopt;
    // "got string \"1.38\"", "got boolean true"; a null is its own value ("got null", not "got null null").
    if (!v->is_number())
      refuse(fmt::format("'{}' must be a number, got {}", key,
                         v->is_null() ? std::string("null") : fmt::format("{} {}", v->type_name(), v->dump())));
    // nlohmann::json keeps integers apart from doubles; get<double> reads either.
    const double x = v->get<double>();
    if (!std::isfinite(x)) refuse(fmt::format("'{}' must be a finite number", key));
    return x;
  }
  std::string variant(const char* key) {
    // A required text() throws rather than return nullopt, so the dereference is safe.
    std::string name = *text(key, true);
    check_variant(name, key);
    return name;
  }
  void check_variant(const std::string& name, const std::string& key) const {
    try {
      // resolve_variant knows every variant egm can build: a typo fails at load, not when scoring.
      (void)resolve_variant(name);
    } catch (const ConfigError& e) {
      refuse(fmt::format("'{}': {}", key, e.what()));
    }
  }
  // After every read: a key no reader asked for.
  void no_other_fields() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!known_.count(it.key())) refuse(fmt::format("unknown field '{}'", it.key()));
  }

 private:
  const Json& j_;
  std::string where_;
  std::set<std::string> known_;
};

ClaimKind parse_kind(Entry& e) {
  const std::string name = *e.text("kind", true);
  if (std::optional<ClaimKind> kind = find_enum<ClaimKind>(name, kKindNames)) return *kind;
  // refuse() is [[noreturn]]: no return is needed after it.
  e.refuse(fmt::format("unknown kind '{}'; valid: {}", name, fmt::join(kKindNames, ", ")));
}

std::vector<std::string> mope_variants(Entry& e) {
  const Json* v = e.field("variants", true);
  if (!v->is_array() || v->empty()) e.refuse("'variants' must be a non-empty array of variant names");
  std::vector<std::string> out;
  for (const Json& n : *v) {
    if (!n.is_string()) e.refuse(fmt::format("'variants' holds {}, not a variant name", n.dump()));
    e.check_variant(n.get<std::string>(), "variants");
    out.push_back(n.get<std::string>());
  }
  return out;
}

PaperClaim parse_claim(const Json& j, std::size_t index, const std::string& origin, const std::string& reference) {
  std::string where = fmt::format("{}: claims[{}]", origin, index);
  if (!j.is_object()) EGM_THROW(ConfigError, "{}: must be an object, got {}", where, j.type_name());
  // The id, when readable, goes into every message, so the entry is easy to find.
  if (auto id = j.find("id"); id != j.end() && id->is_string()) where += fmt::format(" (id '{}')", id->get<std::string>());
  Entry e(j, where);
  PaperClaim c;
  c.id = *e.text("id", true);
  if (c.id.empty()) e.refuse("'id' is empty");
  c.kind = parse_kind(e);
  c.claim = *e.text("claim", true);
  c.note = e.text("note", false).value_or("");
  switch (c.kind) {
    case ClaimKind::value:
    case ClaimKind::delta:
      c.variant = e.variant("variant");
      // An entry's own reference overrides the file's (which defaults to base).
      c.reference = e.text("reference", false).value_or(reference);
      e.check_variant(c.reference, "reference");
      if (c.kind == ClaimKind::value) c.value = e.number("value", true);
      // Required for a delta claim; a value claim may quote one too.
      c.delta = e.number("delta", c.kind == ClaimKind::delta);
      // Remembered apart: a delta derived below from two published values is not a quoted one.
      c.delta_quoted = c.delta.has_value();
      break;
    case ClaimKind::interaction: {
      c.value = e.number("value", true);
      const Json* f = e.field("factors", true);
      if (!f->is_object()) e.refuse("'factors' must be an object {a, b, ab, base}");
      // An Entry of its own, so an unknown field inside factors is refused too.
      Entry fe(*f, where + " factors");
      c.factors = {fe.variant("a"), fe.variant("b"), fe.variant("ab"), fe.variant("base")};
      fe.no_other_fields();
      break;
    }
    case ClaimKind::mope_clusters: {
      c.variants = mope_variants(e);
      const double k = *e.number("clusters", true);
      // JSON numbers are doubles here, so whole is checked explicitly.
      if (k < 1 || k > 8 || k != std::floor(k)) e.refuse("'clusters' must be a whole number from 1 to 8");
      c.clusters = static_cast<int>(k);
      break;
    }
    case ClaimKind::mope_boundary:
      c.variants = mope_variants(e);
      c.boundary = *e.number("boundary", true);
      if (c.boundary <= 0) e.refuse("'boundary' must be positive");
      break;
  }
  e.no_other_fields();
  return c;
}

}  // namespace

const char* claim_kind_name(ClaimKind kind) { return enum_name(kind, kKindNames); }

std::vector<std::string> PaperClaim::needs() const {
  switch (kind) {
    case ClaimKind::value:
    case ClaimKind::delta: return variant == reference ? std::vector<std::string>{variant}
                                                       : std::vector<std::string>{reference, variant};
    case ClaimKind::interaction: return {factors.base, factors.a, factors.b, factors.ab};
    case ClaimKind::mope_clusters:
    case ClaimKind::mope_boundary: return variants;
  }
  return {};
}

const PaperClaim* PaperClaims::find(const std::string& id) const {
  for (const PaperClaim& c : claims)
    if (c.id == id) return &c;
  return nullptr;
}

PaperClaims parse_claims(std::string_view text, const std::string& origin) {
  const Json j = parse_json(text, JsonLimits::user(), origin);
  EGM_REQUIRE(j.is_object(), ConfigError, "{}: a claims file is one JSON object, got {}", origin, j.type_name());
  Entry top(j, origin);
  PaperClaims out;
  out.origin = origin;
  out.source = *top.text("source", true);
  out.published_scale = top.text("published_scale", false).value_or("");
  // The metric and reference default to the paper's (final_val, base) when the file leaves them out.
  out.metric = parse_metric(top.text("metric", false).value_or("final_val"));
  out.reference = top.text("reference", false).value_or("base");
  top.check_variant(out.reference, "reference");
  const Json* claims = top.field("claims", true);
  // Checked before the claims are parsed: a misspelt top-level key is the first error reported.
  top.no_other_fields();
  EGM_REQUIRE(claims->is_array() && !claims->empty(), ConfigError, "{}: 'claims' must be a non-empty array", origin);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < claims->size(); ++i) {
    PaperClaim c = parse_claim((*claims)[i], i, origin, out.reference);
    EGM_REQUIRE(ids.insert(c.id).second, ConfigError, "{}: claims[{}] (id '{}'): the id is used twice", origin, i, c.id);
    out.claims.push_back(std::move(c));
  }
  // A value without a quoted delta: its reference's published value minus its own.
  for (PaperClaim& c : out.claims) {
    // Only a value claim against another variant, and only when the file has the reference's own value.
    if (c.kind != ClaimKind::value || c.delta || c.variant == c.reference) continue;
    const auto ref = std::find_if(out.claims.begin(), out.claims.end(), [&](const PaperClaim& r) {
      // The reference's value claim is the one measured against itself.
      return r.kind == ClaimKind::value && r.variant == c.reference && r.variant == r.reference;
    });
    // Losses: lower is better, so the gain is the reference's value minus the variant's.
    if (ref != out.claims.end()) c.delta = *ref->value - *c.value;
  }
  return out;
}

const PaperClaims& embedded_claims() {
  // Parsed once, on first use (a function-local static is thread-safe); a bad embedded file throws there.
  static const PaperClaims claims = parse_claims(
      // sizeof counts the array's terminating NUL, which is not part of the text.
      std::string_view(embedded::kPaperClaims, sizeof(embedded::kPaperClaims) - 1),
      "embedded experiments/paper_claims.json");
  return claims;
}

PaperClaims load_claims(const std::string& path) {
  if (path.empty()) return embedded_claims();
  return parse_claims(read_json_text(path, JsonLimits::user()), path);
}

}  // namespace egm::analysis
