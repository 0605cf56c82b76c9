// terminal_safe and print_safe: control characters as visible escapes.
#include "util/terminal_text.h"

#include <fmt/format.h>

#include <cstdio>

namespace egm {

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Newline and tab are kept: multi-line messages stay readable. ESC and the rest could drive the terminal.
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // U+0080-U+009F: C1 controls (0x9b is CSI, as good as ESC [ to a terminal).
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void print_safe(std::string_view text) {
  const std::string safe = terminal_safe(text);
  // fwrite, not printf: the text may hold '%' and NUL bytes are already escaped.
  std::fwrite(safe.data(), 1, safe.size(), stdout);
}

}  // namespace egm
