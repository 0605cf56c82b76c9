// Typed reads of one JSON object's fields, for every JSON that egm's own
// processes write and read back (protocol messages, trainer records): a
// missing or mistyped field is a ProtocolError naming the object and the
// field ("RESULT message from rank 2: field 'step' must be an integer, got
// string"). Absent and null read the same: "no value" in JSON is null, in C++
// an empty std::optional.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace egm {

class JsonFields {
 public:
  // `what` names the object in errors; `object` must outlive this reader.
  JsonFields(const nlohmann::json& object, std::string what);

  bool has(const char* name) const;  // present and not null
  const nlohmann::json& field(const char* name) const;

  std::string text(const char* name) const;
  std::string text_or(const char* name, const std::string& fallback) const;
  std::optional<std::string> optional_text(const char* name) const;
  int64_t integer(const char* name) const;
  int64_t integer_or(const char* name, int64_t fallback) const;
  std::optional<int64_t> optional_integer(const char* name) const;
  uint64_t unsigned_integer(const char* name) const;
  // A number, or nullopt when absent or null (how NaN and "not measured" travel).
  std::optional<double> optional_number(const char* name) const;
  double number(const char* name) const;  // required, finite or not
  bool boolean_or(const char* name, bool fallback) const;
  const nlohmann::json& object(const char* name) const;
  const nlohmann::json& array(const char* name) const;

  [[noreturn]] void fail(const char* name, const std::string& problem) const;
  const std::string& what() const { return what_; }

 private:
  const nlohmann::json& object_;
  std::string what_;
};

// A finite double as JSON, anything else (NaN, inf, none) as null.
nlohmann::json number_or_null(std::optional<double> value);

}  // namespace egm
