// One word for a POSIX shell: kept as it is when every character is safe,
// else single-quoted with each quote written as '\''.
#include "util/shell.h"

#include <algorithm>
#include <cctype>

namespace egm {

std::string shell_quote(std::string_view value) {
  // The safe set has no shell meaning anywhere in a word; an empty value must be quoted to stay a word.
  const bool safe = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
  if (safe) return std::string(value);
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'') {
      quoted += "'\\''";  // close, escaped quote, reopen
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace egm
