// EGM_TEST_FAIL parsed into its entries (each field checked, a bad one named),
// and the step and kind of failure an entry gives a cell's attempt.
#include "coordinator/failure_injection.h"

#include <sstream>

#include "util/error.h"
#include "util/process_info.h"

namespace egm::coordinator {
namespace {

int64_t parse_int(const std::string& text, const std::string& entry, const char* what) {
  size_t used = 0;
  int64_t v = -1;
  try {
    // stoll throws on no digits or overflow; both end as the message below.
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  EGM_REQUIRE(used == text.size() && !text.empty() && v >= 0, ConfigError,
              "EGM_TEST_FAIL entry '{}': {} must be an integer >= 0, got '{}' (format VARIANT:SEED:STEP:ATTEMPTS)",
              entry, what, text);
  return v;
}

}  // namespace

std::vector<InjectedFailure> parse_injected_failures(const std::string& text) {
  std::vector<InjectedFailure> out;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    // A trailing comma (or an empty variable) adds no entry.
    if (entry.empty()) continue;
    std::vector<std::string> parts;
    std::stringstream fields(entry);
    std::string field;
    while (std::getline(fields, field, ':')) parts.push_back(field);
    EGM_REQUIRE((parts.size() == 4 || parts.size() == 5) && !parts[0].empty(), ConfigError,
                "EGM_TEST_FAIL entry '{}': expected VARIANT:SEED:STEP:ATTEMPTS[:KIND]", entry);
    InjectedFailure f;
    f.variant = parts[0];
    f.seed = static_cast<uint64_t>(parse_int(parts[1], entry, "SEED"));
    f.step = parse_int(parts[2], entry, "STEP");
    f.attempts = static_cast<int>(parse_int(parts[3], entry, "ATTEMPTS"));
    if (parts.size() == 5) f.kind = parts[4];
    EGM_REQUIRE(f.kind == "error" || f.kind == "config" || f.kind == "oom", ConfigError,
                "EGM_TEST_FAIL entry '{}': KIND must be error, config or oom, got '{}'", entry, f.kind);
    out.push_back(f);
  }
  return out;
}

std::vector<InjectedFailure> injected_failures_from_env() { return parse_injected_failures(env_or("EGM_TEST_FAIL")); }

int64_t injected_fail_step(const std::vector<InjectedFailure>& failures, const std::string& variant, uint64_t seed,
                           int attempt) {
  for (const auto& f : failures)
    // The first `attempts` attempts fail; the one after succeeds, which is how retries are tested.
    if (f.variant == variant && f.seed == seed && attempt <= f.attempts) return f.step;
  return -1;
}

std::string injected_fail_kind(const std::vector<InjectedFailure>& failures, const std::string& variant,
                               uint64_t seed, int attempt) {
  for (const auto& f : failures)
    if (f.variant == variant && f.seed == seed && attempt <= f.attempts) return f.kind;
  return "error";
}

}  // namespace egm::coordinator
