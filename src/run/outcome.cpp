// A RunOutcome to JSON and back (RESULT's body, egm train's output), non-finite
// measurements written as null.
#include "run/outcome.h"

#include <cmath>

#include "run/names.h"
#include "util/json_fields.h"

namespace egm {
namespace {
constexpr std::array<const char*, 3> kOutcomes = {"done", "diverged", "interrupted"};
}  // namespace

const char* to_string(Outcome outcome) { return kOutcomes.at(static_cast<std::size_t>(outcome)); }
Outcome parse_outcome(std::string_view name) { return parse_name<Outcome>(name, kOutcomes, "run outcome"); }

bool operator==(const Measurements& a, const Measurements& b) {
  return a.final_val == b.final_val && a.best_val == b.best_val && a.final_train == b.final_train &&
         a.full_val == b.full_val && a.ar_val == b.ar_val && a.ar_ref_val == b.ar_ref_val &&
         a.tokens_per_s == b.tokens_per_s;
}

std::optional<double> finite_or_none(double value) {
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

nlohmann::json to_json(const RunOutcome& o) {
  const Measurements& m = o.measured;
  return {{"status", to_string(o.status)},
          {"message", o.message},
          {"step", o.step},
          {"resumed_from_step", o.resumed_from_step.value_or(-1)},
          {"final_val", number_or_null(m.final_val)},
          {"best_val", number_or_null(m.best_val)},
          {"final_train", number_or_null(m.final_train)},
          {"full_val", number_or_null(m.full_val)},
          {"ar_val", number_or_null(m.ar_val)},
          {"ar_ref_val", number_or_null(m.ar_ref_val)},
          {"tokens_per_s", number_or_null(m.tokens_per_s)}};
}

RunOutcome run_outcome_from_json(const nlohmann::json& object, const std::string& what) {
  const JsonFields f(object, what);
  RunOutcome o;
  const std::string status = f.text("status");
  try {
    o.status = parse_outcome(status);
  } catch (const ProtocolError&) {
    f.fail("status", "must be done, diverged or interrupted, got '" + status + "'");
  }
  o.message = f.text_or("message", "");
  o.step = f.integer("step");
  const int64_t resumed = f.integer_or("resumed_from_step", -1);
  if (resumed >= 0) o.resumed_from_step = resumed;
  Measurements& m = o.measured;
  // A non-finite number cannot arrive (JSON has none); null is no value.
  m.final_val = f.optional_number("final_val");
  m.best_val = f.optional_number("best_val");
  m.final_train = f.optional_number("final_train");
  m.full_val = f.optional_number("full_val");
  m.ar_val = f.optional_number("ar_val");
  m.ar_ref_val = f.optional_number("ar_ref_val");
  m.tokens_per_s = f.optional_number("tokens_per_s");
  return o;
}

}  // namespace egm
