// JsonFields: the typed reads of a protocol message's or a record's fields,
// each failure a ProtocolError naming the object and the field.
#include "util/json_fields.h"

#include <cmath>

#include "util/error.h"

namespace egm {

using json = nlohmann::json;

JsonFields::JsonFields(const json& object, std::string what) : object_(object), what_(std::move(what)) {
  EGM_REQUIRE(object_.is_object(), ProtocolError, "{}: must be a JSON object, got {}", what_, object_.type_name());
}

// An explicit null counts as absent: writers put null for "no value" (number_or_null).
bool JsonFields::has(const char* name) const {
  auto it = object_.find(name);
  return it != object_.end() && !it->is_null();
}

const json& JsonFields::field(const char* name) const {
  auto it = object_.find(name);
  // fail throws, so *it below is never end().
  if (it == object_.end()) fail(name, "is missing");
  return *it;
}

std::string JsonFields::text(const char* name) const {
  const json& v = field(name);
  if (!v.is_string()) fail(name, "must be a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

std::string JsonFields::text_or(const char* name, const std::string& fallback) const {
  return has(name) ? text(name) : fallback;
}

std::optional<std::string> JsonFields::optional_text(const char* name) const {
  if (!has(name)) return std::nullopt;
  return text(name);
}

int64_t JsonFields::integer(const char* name) const {
  const json& v = field(name);
  // A float is refused even when whole: egm's own writers always write integers as integers.
  if (!v.is_number_integer()) fail(name, "must be an integer, got " + std::string(v.type_name()));
  return v.get<int64_t>();
}

int64_t JsonFields::integer_or(const char* name, int64_t fallback) const { return has(name) ? integer(name) : fallback; }

std::optional<int64_t> JsonFields::optional_integer(const char* name) const {
  if (!has(name)) return std::nullopt;
  return integer(name);
}

uint64_t JsonFields::unsigned_integer(const char* name) const {
  const json& v = field(name);
  // nlohmann types a non-negative integer literal as unsigned, so a negative one fails here.
  if (!v.is_number_unsigned()) fail(name, "must be a non-negative integer, got " + v.dump());
  return v.get<uint64_t>();
}

std::optional<double> JsonFields::optional_number(const char* name) const {
  if (!has(name)) return std::nullopt;
  const json& v = object_.at(name);
  if (!v.is_number()) fail(name, "must be a number or null, got " + std::string(v.type_name()));
  return v.get<double>();
}

double JsonFields::number(const char* name) const {
  const json& v = field(name);
  if (!v.is_number()) fail(name, "must be a number, got " + std::string(v.type_name()));
  return v.get<double>();
}

bool JsonFields::boolean_or(const char* name, bool fallback) const {
  if (!has(name)) return fallback;
  const json& v = object_.at(name);
  if (!v.is_boolean()) fail(name, "must be true or false");
  return v.get<bool>();
}

const json& JsonFields::object(const char* name) const {
  const json& v = field(name);
  if (!v.is_object()) fail(name, "must be an object, got " + std::string(v.type_name()));
  return v;
}

const json& JsonFields::array(const char* name) const {
  const json& v = field(name);
  if (!v.is_array()) fail(name, "must be an array, got " + std::string(v.type_name()));
  return v;
}

void JsonFields::fail(const char* name, const std::string& problem) const {
  EGM_THROW(ProtocolError, "{}: field '{}' {}", what_, name, problem);
}

// JSON has no NaN or infinity: they are written as null, as is a missing value.
json number_or_null(std::optional<double> value) {
  return value && std::isfinite(*value) ? json(*value) : json(nullptr);
}

}  // namespace egm
