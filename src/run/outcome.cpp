// A RunOutcome to JSON and back (RESULT's body, egm train's output), non-finite
// measurements written as null.
#include "run/outcome.h"

#include <cmath>

#include "util/enum_names.h"
#include "util/json_fields.h"

namespace egm {
namespace {
// In Outcome's declaration order: the enum's value is the index.
constexpr std::array<const char*, 3> kOutcomes = {"done", "diverged", "interrupted"};
}  // namespace

// .at(): an out-of-range value (memory corruption, a bad cast) throws rather than reads past the array.
const char* to_string(Outcome outcome) { return kOutcomes.at(static_cast<std::size_t>(outcome)); }
Outcome parse_outcome(std::string_view name) {
  return parse_enum<Outcome, ProtocolError>(name, kOutcomes, "run outcome");
}

bool operator==(const Measurements& a, const Measurements& b) {
  for (const MeasurementField& f : kMeasurementFields)
    if (a.*f.value != b.*f.value) return false;
  return true;
}

// The measurements that have a column in cells (cells_since > 0); the others are kept per attempt only.
std::vector<MeasurementField> cell_measurements() {
  std::vector<MeasurementField> fields;
  for (const MeasurementField& f : kMeasurementFields)
    if (f.cells_since > 0) fields.push_back(f);
  return fields;
}

std::optional<double> finite_or_none(double value) {
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

nlohmann::json to_json(const RunOutcome& o) {
  nlohmann::json j = {{"status", to_string(o.status)},
                      {"message", o.message},
                      {"step", o.step},
                      // -1 for "not resumed": the reader below maps any negative value back to none.
                      {"resumed_from_step", o.resumed_from_step.value_or(-1)}};
  // A NaN or infinite loss (a diverged run) has no JSON form: written as null.
  for (const MeasurementField& f : kMeasurementFields) j[f.name] = number_or_null(o.measured.*f.value);
  return j;
}

RunOutcome run_outcome_from_json(const nlohmann::json& object, const std::string& what) {
  const JsonFields f(object, what);
  RunOutcome o;
  const std::string status = f.text("status");
  try {
    o.status = parse_outcome(status);
  } catch (const ProtocolError&) {
    // Rethrown through JsonFields so the message names the record and the field.
    f.fail("status", "must be done, diverged or interrupted, got '" + status + "'");
  }
  o.message = f.text_or("message", "");
  o.step = f.integer("step");
  const int64_t resumed = f.integer_or("resumed_from_step", -1);
  if (resumed >= 0) o.resumed_from_step = resumed;
  // A non-finite number cannot arrive (JSON has none); null is no value.
  for (const MeasurementField& m : kMeasurementFields) o.measured.*m.value = f.optional_number(m.name);
  return o;
}

}  // namespace egm
