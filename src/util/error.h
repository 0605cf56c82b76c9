// One exception family for the whole project. Every error carries where it was
// raised (file:line, host, MPI rank) apart from its message, so a user sees a
// clean message and a developer can still find the source.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace egm {

class Error : public std::runtime_error {
 public:
  Error(std::string message, std::string where)
      : std::runtime_error(std::move(message)), where_(std::move(where)) {}
  // "src/model/gpt.cpp:42 on host1 (rank 3)"; empty when raised without a location.
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

// Bad user input: configs, specs, flags. The message says how to fix it.
class ConfigError : public Error { using Error::Error; };
// Files: missing corpus, corrupt checkpoint, full disk.
class IoError : public Error { using Error::Error; };
// Messages between coordinator and workers that do not fit the protocol.
class ProtocolError : public Error { using Error::Error; };
// A training run whose loss became NaN or infinite.
class DivergenceError : public Error { using Error::Error; };
// Database problems (SQLite errors, schema versions).
class DbError : public Error { using Error::Error; };

namespace detail {
std::string location(const char* file, int line);

template <typename E>
[[noreturn]] void raise(const char* file, int line, std::string message) {
  throw E(std::move(message), location(file, line));
}
}  // namespace detail

}  // namespace egm

// EGM_THROW(ConfigError, "bad value {}", v): throw with location.
#define EGM_THROW(Type, ...) \
  ::egm::detail::raise<::egm::Type>(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))

// EGM_CHECK(cond, "message {}", arg): an internal invariant; throws egm::Error.
#define EGM_CHECK(cond, ...)                    \
  do {                                          \
    if (!(cond)) EGM_THROW(Error, __VA_ARGS__); \
  } while (0)

// EGM_REQUIRE(cond, ConfigError, "message"): a check on user input.
#define EGM_REQUIRE(cond, Type, ...)           \
  do {                                         \
    if (!(cond)) EGM_THROW(Type, __VA_ARGS__); \
  } while (0)
