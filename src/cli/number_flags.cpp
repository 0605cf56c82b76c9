// Number flags in decimal and in range of their type (number_flags.h says why).
#include "cli/number_flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

namespace egm::cli {
namespace {

template <typename T>
std::optional<std::string> parse_as(const std::string& text, std::string& why) {
  T value{};
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, value, 10);
  if (error == std::errc::result_out_of_range) {
    why = fmt::format("'{}' is out of range ({} to {})", text, std::numeric_limits<T>::min(),
                      std::numeric_limits<T>::max());
    return std::nullopt;
  }
  if (error != std::errc() || end != last) {
    why = fmt::format("'{}' is not a whole number in decimal digits", text);
    return std::nullopt;
  }
  return std::to_string(value);
}

enum class NumberKind { none, whole_signed, whole_unsigned, real };

// From CLI11's type name; a validator's description follows a ':' ("INT:POSITIVE").
NumberKind number_kind(const CLI::Option& option) {
  if (option.get_type_size_max() == 0) return NumberKind::none;  // a flag without a value (-v)
  const std::string type = option.get_type_name();
  const std::string base = type.substr(0, type.find(':'));
  if (base == "INT") return NumberKind::whole_signed;
  if (base == "UINT") return NumberKind::whole_unsigned;
  if (base == "FLOAT") return NumberKind::real;
  return NumberKind::none;
}

// The canonical decimal text of a signed (or unsigned) 64-bit whole number ("007" -> "7").
// from_chars in base 10 takes digits and, for a signed type, a '-': no '+', spaces,
// base prefixes or exponents.
std::optional<std::string> decimal_whole_number(const std::string& text, bool is_signed, std::string& why) {
  if (!is_signed && !text.empty() && text[0] == '-') {
    why = fmt::format("'{}' is negative; expected a whole number from 0", text);
    return std::nullopt;
  }
  return is_signed ? parse_as<int64_t>(text, why) : parse_as<uint64_t>(text, why);
}

// `text` when it is a finite decimal number ("0.95", "-1", "1e-3").
std::optional<std::string> decimal_number(const std::string& text, std::string& why) {
  // strtod would also take "nan", "inf", hexadecimal and leading spaces: only these characters get to it.
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string::npos) {
    why = fmt::format("'{}' is not a decimal number", text);
    return std::nullopt;
  }
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    why = fmt::format("'{}' is not a decimal number", text);
    return std::nullopt;
  }
  if (!std::isfinite(value)) {
    why = fmt::format("'{}' is out of range (a double's, {:g} in magnitude)", text, std::numeric_limits<double>::max());
    return std::nullopt;
  }
  return text;
}

}  // namespace

void read_numbers_as_decimal(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const NumberKind kind = number_kind(*option);
    if (kind == NumberKind::none) continue;
    option->transform(CLI::Validator(
        [kind](std::string& value) {
          std::string why;
          const std::optional<std::string> read =
              kind == NumberKind::real ? decimal_number(value, why)
                                       : decimal_whole_number(value, kind == NumberKind::whole_signed, why);
          if (!read) return why;
          value = *read;
          return std::string();
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) read_numbers_as_decimal(*sub);
}

}  // namespace egm::cli
