// The run vocabulary's enum <-> name tables (internal to src/run): names in
// enum order, one parse that lists the valid names when it fails.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "util/error.h"

namespace egm {

template <typename Enum, std::size_t N>
Enum parse_name(std::string_view name, const std::array<const char*, N>& names, const char* what) {
  for (std::size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<Enum>(i);
  EGM_THROW(ProtocolError, "unknown {} '{}'; valid: {}", what, std::string(name), fmt::join(names, ", "));
}

}  // namespace egm
