// An enum's names, written once in enum order (a C array or std::array of
// const char*) and read both ways: a value's name, and the value a name
// stands for, with one refusal that lists the valid names.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.h"

namespace egm {

// names[value]; "?" for a value past the end of the table.
template <typename Enum, typename Names>
const char* enum_name(Enum value, const Names& names) {
  const auto i = static_cast<std::size_t>(value);
  return i < std::size(names) ? names[i] : "?";
}

// The value `name` stands for, or nullopt.
template <typename Enum, typename Names>
std::optional<Enum> find_enum(std::string_view name, const Names& names) {
  for (std::size_t i = 0; i < std::size(names); ++i)
    if (name == names[i]) return static_cast<Enum>(i);
  return std::nullopt;
}

// The value `name` stands for; otherwise throws Error "unknown WHAT 'NAME'; valid: A, B, C".
template <typename Enum, typename Error, typename Names>
Enum parse_enum(std::string_view name, const Names& names, std::string_view what) {
  if (std::optional<Enum> value = find_enum<Enum>(name, names)) return *value;
  detail::raise<Error>(__FILE__, __LINE__,
                       fmt::format("unknown {} '{}'; valid: {}", what, name, fmt::join(names, ", ")));
}

}  // namespace egm
