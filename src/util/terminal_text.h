// Text from a database, made safe to print on a terminal: a sweep name, a host
// or a look's words may come from someone else's database, and raw control
// bytes in them would set the reader's window title, clear the screen or
// recolour it (ESC sequences, C1 controls).
#pragma once

#include <fmt/format.h>

#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace egm {

// `text` with every control character but newline and tab (C0, DEL, and the
// C1 range U+0080-U+009F in UTF-8) written as a visible escape: "\x1b",
// "\u009b". Everything else, valid UTF-8 or not, is kept byte for byte.
std::string terminal_safe(std::string_view text);

// Writes terminal_safe(text) to standard output (the reading verbs' text forms).
void print_safe(std::string_view text);
// fmt::print to standard output, through terminal_safe.
template <typename... Args>
void print_safe(fmt::format_string<Args...> format, Args&&... args) {
  print_safe(std::string_view(fmt::format(format, std::forward<Args>(args)...)));
}

// A verb's standard output, collected and written through terminal_safe when
// it goes out of scope: `SafeStdout out; out << text;` where `std::cout << text` was.
class SafeStdout {
 public:
  SafeStdout() = default;
  SafeStdout(const SafeStdout&) = delete;
  SafeStdout& operator=(const SafeStdout&) = delete;
  ~SafeStdout() { print_safe(std::string_view(text_.str())); }
  template <typename T>
  SafeStdout& operator<<(const T& value) {
    text_ << value;
    return *this;
  }

 private:
  std::ostringstream text_;
};

}  // namespace egm
